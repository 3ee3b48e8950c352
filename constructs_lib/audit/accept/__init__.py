"""What a run accepts besides the templates themselves: acceptance applied after judging
(``apply``), profiles, suppressions and baselines."""
