"""The front end: serQ source text → IR (parse, then link)."""
