"""The adversarial suite (issue 25): each attack as a test, and fuzzers for the S3 gateway, the lakeFS
API and the tables API. A package, so its helpers import as `security.util` while `from conftest
import ...` keeps meaning tests/conftest.py."""
