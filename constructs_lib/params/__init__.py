"""What each public call accepts: the kinds of value (``kinds``), the parameter table
(``table``), durations in the seconds AWS counts (``durations``), every call's parameters
declared once (``prop_tables``, one module per call), the rules between parameters and the
misuse of the API (``combinations``), and the docstrings rendered from the tables
(``docstrings``)."""
