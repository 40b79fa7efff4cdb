"""The vocabulary every layer shares."""
