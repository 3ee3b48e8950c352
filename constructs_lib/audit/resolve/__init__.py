"""References resolved to resources, within one template (``within_template``) and across a fleet
(``graph``; ``crossing``, the Spark join stage's share when the driver joins it), and nested
stacks (``nesting``)."""
