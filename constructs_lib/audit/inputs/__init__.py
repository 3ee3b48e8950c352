"""The audit's inputs: where templates come from, and how their bytes are fetched.

An input is something the audit is asked to judge, named on the command line or by a caller: a
template file, a folder of templates or a ``cdk.out`` cloud assembly, or an ``s3://`` object or
prefix. Each comes in two steps, split between the driver and whoever parses:

- listing (``discovery.discover``): the driver turns the inputs into ``(location, stack name)``
  pairs without reading a template's body, so a hostile input costs it nothing;
- reading (``reading.read_bytes`` for a file, ``objects.read_object`` for an object): the bytes
  of one template, within the size cap, in a parsing worker or on a Spark executor.

``template_names`` holds the name rules both listings share: which names may be templates,
which folders are never walked, and a template's stack name. Other kinds of input (stacks
already deployed, metric streams) belong here too, each listed and read the same way.
Parsing the bytes is not an input's job: that is ``parse.documents`` and the dialects.
"""
