"""README.md and docs/: relative links point at files that exist, and no project-internal
terms a user cannot act on (GPUs "lent", the developers' ../shared tools, issue numbers of
a tracker users cannot see)."""

import glob
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]
INTERNAL = [r"\blent\b", r"\.\./shared/", r"\bissues? #?\d+\b", r"\bIMPLEMENTATION-NOTES\b"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_point_at_existing_files(path):
  text = open(path).read()
  missing = []
  for target in LINK.findall(text):
    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
      continue  # a URL or an anchor in the page
    file = target.split("#", 1)[0]
    if file and not os.path.exists(os.path.join(os.path.dirname(path), file)):
      missing.append(target)
  assert not missing, f"{os.path.relpath(path, ROOT)} links to missing files: {missing}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_internal_terms(path):
  found = []
  for number, line in enumerate(open(path), 1):
    for pattern in INTERNAL:
      if re.search(pattern, line, re.IGNORECASE):
        found.append(f"{number}: {line.strip()[:100]}")
  assert not found, f"{os.path.relpath(path, ROOT)}:\n" + "\n".join(found)
