"""A sixth case type, for tests only: a warranty claim (issue 45 item 4, "A sixth type is only
its own package"). Everything it adds to the product is in this folder and registered from its
AppConfig.ready (apps.py); no shared file names it. It is installed only by its own settings
(settings.py), for the tests in drive/, which tests/sixth_type/test_sixth_type.py runs in a
process of their own."""
