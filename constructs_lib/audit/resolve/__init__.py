"""References resolved to resources, within one template (``within_template``) and across a fleet
(``graph``), and nested stacks (``nesting``)."""
