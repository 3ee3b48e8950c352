"""Queue policies read the way IAM reads them: who a statement admits, and whether a policy
denies every request made without TLS.

Two questions, answered for one queue and the policy documents attached to it:

- ``public_access.public_statements``: the ``Allow`` statements that admit anyone (QR023). A
  statement is public when its principal is everyone (``"*"``, ``{"AWS": "*"}``, a list holding
  ``"*"``, or any ``NotPrincipal``) or a service principal, unless a condition ties it to known
  parties (``conditions.RESTRICTING_KEYS``) with a positive operator and fixed values, or a
  ``Deny`` of the same policy refuses everyone outside such parties.
- ``tls_deny.tls_verdict``: what the policy's ``Deny ... aws:SecureTransport false`` statements
  leave open (QR013): principals, actions, the queue itself, or requests a narrowing condition
  lets by.

Both read statements through ``statements`` (principals, queue actions, whether a ``Resource``
covers the queue) and ``conditions`` (a ``Condition`` block's tests).

Values are the audit's normalized ones (``intrinsics.py``): ``{"$ref": "local:..."}`` names a
resource of the same template (a fixed value of this account), any other reference,
``{"$unresolved": ...}`` and text holding ``${?}`` are unknown. A verdict that depends on an
unknown value is ``Unknown`` (QR900), never a guess. Nothing here imports CDK or Spark.

Sources (checked 2026-11-24):
- IAM guide, condition operators: an absent key fails a positive operator and passes a negated
  one; ``...IfExists`` passes when the key is absent; ``ForAllValues`` passes when the key is
  absent; ``Null`` tests only presence. Condition keys are case-insensitive; operators of one
  block are ANDed, values of one key ORed (NOR for negated operators).
- IAM guide, global condition keys: service-only keys (``aws:SourceArn``, ``aws:SourceAccount``,
  ...) are absent from requests that IAM principals make.
- IAM guide, NotPrincipal: only supported with ``Deny``; with ``Allow`` it admits everyone but the
  listed principals.
- IAM Access Analyzer: policy checks "Security Warning - Allow with NotPrincipal" and "Security
  Warning - Restrict access to service principal" (use ``aws:SourceArn``, ``aws:SourceAccount``,
  ``aws:SourceOrgID`` or ``aws:SourceOrgPaths``); external access findings treat the keys of
  ``RESTRICTING_KEYS`` as restricting.
- AWS Config rule sqs-queue-no-public-access (Security Hub SQS.3): "To be considered non-public,
  an SQS policy must grant access only to fixed values ... that don't contain a wildcard".
- S3 user guide, "The meaning of public": fixed ``aws:SourceArn``, ``aws:SourceVpc``,
  ``aws:SourceVpce``, ``aws:SourceOwner``, ``aws:SourceAccount``, ``aws:userid``, and a set of
  CIDRs in ``aws:SourceIp``.
- SQS developer guide, security best practices: deny ``sqs:*`` when ``aws:SecureTransport`` is
  false; AWS's resource control policy examples write it ``BoolIfExists``.
"""
