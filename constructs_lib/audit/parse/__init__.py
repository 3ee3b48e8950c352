"""One template's path from bytes to flat rows: the document (``documents``), its positions,
parameters and intrinsics, the dialects (``dialects``), all run in isolated worker processes
(``isolation``), and the pipeline that strings them together (``pipeline``)."""
