"""The two engines that run the audit: in one process (``local``) and on Spark (``spark/``),
judging with the same code (``judging``)."""
