"""What each public call accepts: the kinds of value (``kinds``), the parameter table
(``table``), durations in the seconds AWS counts (``durations``), every call's parameters
declared once (``prop_tables``, one module per call), the rules between parameters and the
misuse of the API (``combinations``), a consumer's ``retry_backoff`` fields judged with its call
(``backoff_fields``), the docstrings rendered from the tables (``docstrings``), and each call's
arguments, once judged, as one frozen settings object (``settings``): nothing outside this
package reads an argument by name."""
