"""Every relative link of the user-facing pages resolves: README.md, CHANGELOG.md,
tests/README.md and every page under docs/ (the algorithm pages, the result pages, the
archive). A link names a file that exists, and a `#anchor` names a heading of the page it
points into (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens, a
repeated heading gets -1, -2, ...). Links inside code blocks and spans are not links."""

import glob
import os
import re

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGES = [
  "README.md",
  "CHANGELOG.md",
  os.path.join("tests", "README.md"),
  *sorted(
    os.path.relpath(p, ROOT)
    for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
  ),
]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)")


def _read(path):
  with open(os.path.join(ROOT, path), encoding="utf-8") as f:
    return f.read()


def slug(heading):
  """GitHub's anchor for a heading's text."""
  text = re.sub(r"<[^>]+>", "", heading).strip().lower()
  return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text):
  """The anchors of a markdown page's headings (outside code blocks)."""
  found, seen = set(), {}
  for line in FENCE.sub("", text).splitlines():
    match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
    if match:
      base = slug(match.group(1))
      n = seen.get(base, 0)
      found.add(base if n == 0 else f"{base}-{n}")
      seen[base] = n + 1
  return found


def relative_links(text):
  """The link targets of a page that are not URLs (nor inside code)."""
  text = SPAN.sub("", FENCE.sub("", text))
  return [t for t in LINK.findall(text) if t and not re.match(r"^[a-zA-Z][\w+.-]*:", t)]


def broken_links(page, text=None):
  """The relative links of `page` (a path from the repository root) that do not resolve."""
  text = _read(page) if text is None else text
  broken = []
  for target in relative_links(text):
    file, _, anchor = target.partition("#")
    resolved = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
    full = os.path.join(ROOT, resolved)
    if not os.path.exists(full):
      broken.append(f"{target} (no file {resolved})")
    elif anchor and full.endswith(".md"):
      own = text if resolved == os.path.normpath(page) else _read(resolved)
      if anchor not in anchors(own):
        broken.append(f"{target} (no heading #{anchor} in {resolved})")
  return broken


def test_the_pages_are_found():
  assert {"README.md", "CHANGELOG.md", "docs/results.md", "docs/algorithms/gala.md"} <= set(PAGES)
  assert len(PAGES) >= 50


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
  broken = broken_links(page)
  assert not broken, f"{page}: " + "; ".join(broken)


def test_a_broken_link_or_anchor_is_caught():
  # The check itself: a missing file, a missing heading and a good link of README.md.
  text = _read("README.md")
  assert relative_links(text) and not broken_links("README.md", text)
  assert broken_links("README.md", text + "\n[x](docs/no_such_page.md)\n")
  assert broken_links("README.md", text + "\n[x](docs/results.md#no-such-heading)\n")
  assert not broken_links("README.md", text + "\n[x](docs/results.md#verdicts)\n")
  assert not broken_links("README.md", text + "\n`[x](not/a/link.md)`\n")


def test_anchors_follow_github():
  page = "# Pong-v5: 3 of 3 seeds\n## `galax` from Python\n## Usage\n## Usage\n"
  assert anchors(page) == {"pong-v5-3-of-3-seeds", "galax-from-python", "usage", "usage-1"}
