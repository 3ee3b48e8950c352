"""The example app's stack and Lambda handlers."""
