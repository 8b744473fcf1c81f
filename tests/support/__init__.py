"""What the tests share: helpers imported by name (``from tests.support import browser``)."""
