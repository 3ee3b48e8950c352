"""constructs_lib."""
