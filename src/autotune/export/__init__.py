"""The best configurations of a study as something a person can paste or deploy."""
