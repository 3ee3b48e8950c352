"""What sends into a ResilientQueue: the collaborator the construct delegates ``add_producer``
and ``grant_redrive`` to (``calls``), the rules of each producer (``problems``), its wiring
(``wiring``), the policy statements the services need (``statements``), and SNS's own delivery
failures (``sns_delivery_failures``)."""
