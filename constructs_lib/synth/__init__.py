"""What is decided when the app synthesizes: the deferred checks (``deferred``), the
acknowledgments of audit rules read back from the tree (``acknowledgments``), and deprecation
announcements (``deprecations``)."""
