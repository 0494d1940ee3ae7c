"""README.md and docs/: no project-internal terms a user cannot act on (GPUs "lent", the
developers' ../shared tools, issue numbers of a tracker users cannot see). Links:
tests/project/test_links.py."""

import glob
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]
INTERNAL = [r"\blent\b", r"\.\./shared/", r"\bissues? #?\d+\b", r"\bIMPLEMENTATION-NOTES\b"]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_internal_terms(path):
  found = []
  for number, line in enumerate(open(path), 1):
    for pattern in INTERNAL:
      if re.search(pattern, line, re.IGNORECASE):
        found.append(f"{number}: {line.strip()[:100]}")
  assert not found, f"{os.path.relpath(path, ROOT)}:\n" + "\n".join(found)
