"""What each public call accepts: the kinds of value (``kinds``), the parameter table (``table``),
every call's parameters declared once (``prop_tables``), the rules between parameters
(``combinations``), and the docstrings rendered from the tables (``docstrings``)."""
