"""search_spaces/verify.yaml as a landscape: it lives in the test tree
(``tests/search/verify_space.py``), where the search's golden traces read it."""

from tests.search.verify_space import VERIFY, evaluate

__all__ = ["VERIFY", "evaluate"]
