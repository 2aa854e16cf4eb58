"""The built documentation site, rendered by headless Chromium at a desktop and a phone width.

For every main page, at 1400 and 420 CSS pixels: no element reaches past the viewport
(wide code, outputs and tables of four or more columns scroll inside their own box instead;
tables of up to three columns and shell commands wrap and fit), the page itself does not scroll sideways, and no figure is shrunk so far that its text cannot be read: on the
desktop none is shown at less than 75% of its size (its text stays above about 9 px), and on
the phone each one that is opens at full size on a click. A screenshot of each
page and width is written to ``docs/_build/screenshots`` for a person to look at.

The site must be built first (``.ci/run`` does so, then runs this file); where it is not,
or where Debian's ``chromium`` is absent, the tests skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SITE = Path(os.environ.get("METAEVAL_DOCS_HTML", ROOT / "docs" / "_build" / "html"))
SHOTS = SITE.parent / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTHS = (1400, 420)
#: Every page a reader comes to: the guides, the examples, the API overview pages (the ~150
#: generated function pages share one template with api/top_level.html).
PAGES = sorted(
    str(p.relative_to(SITE))
    for folder in ("", "getting_started", "user_guide", "examples", "api")
    for p in (SITE / folder).glob("*.html")
    if p.name not in ("genindex.html", "search.html", "py-modindex.html")
) or ["index.html"]
#: matplotlib draws metaeval's 9 pt figure text at 100 dpi as 12.5 px: a figure shown at
#: less than 75% of its pixel width has text below about 9 px, too small to read in place.
#: On the desktop no figure may be shown that small; on the phone each one that is must open
#: at full size on a click.
MIN_IMAGE_SCALE = 0.75

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (Debian's chromium) is absent"),
    pytest.mark.skipif(
        not (SITE / "index.html").is_file(), reason=f"the site is not built ({SITE})"
    ),
]

# Runs in the page after load: every visible element outside the viewport that is not inside
# a box that scrolls sideways, whether the page scrolls sideways, and figures shown too small.
PROBE = r"""
<script>
window.addEventListener("load", () => setTimeout(() => {
  const vw = document.documentElement.clientWidth;
  const scrolls = (el) => {
    for (let a = el.parentElement; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (["auto", "scroll", "hidden", "clip"].includes(s.overflowX)
          && a.scrollWidth >= a.clientWidth && a.getBoundingClientRect().right <= vw + 1) {
        return true;
      }
    }
    return false;
  };
  const hidden = (el) => {
    for (let a = el; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.display === "none" || s.visibility === "hidden" || s.opacity === "0") return true;
      if (a.tagName === "DIALOG" && !a.open) return true;
    }
    return false;
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
    + (el.className && typeof el.className === "string"
       ? "." + el.className.trim().split(/\s+/).slice(0, 3).join(".") : "");
  const over = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.bottom < 0) continue;
    if ((r.right > vw + 1 || r.left < -1) && !scrolls(el) && !hidden(el)) {
      over.push({el: name(el), left: Math.round(r.left), right: Math.round(r.right),
                 text: (el.innerText || "").slice(0, 60)});
    }
  }
  // tables of prose (up to three columns) and shell commands must fit: they wrap
  const wide = [];
  for (const el of document.querySelectorAll(
      ".bd-article table.table, div.highlight-bash pre, div.highlight-shell pre")) {
    if (hidden(el)) continue;
    // a table of four or more columns (numbers, mostly) may scroll in its own box
    if (el.tagName === "TABLE" && el.rows.length && el.rows[0].cells.length > 3) continue;
    const r = el.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + 1 || r.right > vw + 1) {
      wide.push({el: name(el), width: Math.round(r.width), scroll: el.scrollWidth,
                 text: (el.innerText || "").slice(0, 60)});
    }
  }
  const small = [];
  for (const img of document.querySelectorAll("img")) {
    const r = img.getBoundingClientRect();
    if (!img.naturalWidth || r.width === 0 || hidden(img)) continue;
    const link = img.closest("a");
    const opens = link && link.getAttribute("href") && !link.getAttribute("href").startsWith("#");
    if (r.width / img.naturalWidth < %(scale)s) {
      small.push({src: img.getAttribute("src").slice(-60), shown: Math.round(r.width),
                  natural: img.naturalWidth, opens: Boolean(opens)});
    }
  }
  const report = {width: vw, scroll_width: document.documentElement.scrollWidth,
                  overflow: over, wide: wide, small_images: small};
  const pre = document.createElement("pre");
  pre.id = "render-report";
  pre.textContent = JSON.stringify(report);
  document.body.appendChild(pre);
}, 300));
</script>
""".replace("%(scale)s", str(MIN_IMAGE_SCALE))

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
]


def _chromium(*args: str, width: int, profile: str) -> str:
    done = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},1000", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _report(page: Path, width: int, profile: str) -> dict:
    """The probe's findings for ``page`` at ``width``: a copy of the page with the probe added,
    beside it so that its styles and images load, rendered and its DOM read back."""
    html = page.read_text(encoding="utf-8")
    probe = page.with_name(f".render-probe-{page.name}")
    probe.write_text(html.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
    try:
        dom = _chromium(
            "--virtual-time-budget=10000",
            "--dump-dom",
            probe.as_uri(),
            width=width,
            profile=profile,
        )
    finally:
        probe.unlink()
    found = re.search(r'<pre id="render-report">(.*?)</pre>', dom, re.S)
    assert found, f"{page}: the probe did not run"
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))


@pytest.fixture(scope="module")
def profile():
    with tempfile.TemporaryDirectory() as folder:
        yield folder


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_page_fits_the_window_and_its_figures_can_be_read(name, width, profile):
    page = SITE / name
    assert page.is_file(), f"{name} is not in the site"
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{name.replace('/', '_').removesuffix('.html')}-{width}.png"
    _chromium(f"--screenshot={shot}", page.as_uri(), width=width, profile=profile)
    assert shot.stat().st_size > 5_000
    report = _report(page, width, profile)
    assert report["scroll_width"] <= report["width"] + 1, report
    assert not report["overflow"], json.dumps(report["overflow"][:10], indent=1)
    assert not report["wide"], json.dumps(report["wide"][:10], indent=1)
    if width >= 1400:  # a desktop shows every figure large enough to read in place
        assert not report["small_images"], report["small_images"]
    else:  # a phone cannot: each figure shown small opens at full size on a click
        assert all(img["opens"] for img in report["small_images"]), report["small_images"]


def test_the_leaderboards_page_embeds_the_whole_report(profile):
    """The guide page shows the report's own HTML in an iframe: the sortable tables, both
    figures and the methods paragraph, with nothing fetched from outside the page."""
    import html as html_lib

    page = SITE / "user_guide" / "leaderboards.html"
    if not page.is_file():
        pytest.skip("the leaderboards page is not built")
    frames = re.findall(r'<iframe[^>]*srcdoc="([^"]*)"', page.read_text())
    assert len(frames) == 1, f"{len(frames)} iframes with a srcdoc"
    doc = html_lib.unescape(frames[0])
    assert doc.startswith("<!DOCTYPE html>") and doc.count('class="sortable"') >= 4
    assert 'id="fig-ranks"' in doc and 'id="fig-forest-0"' in doc
    assert 'id="methods"' in doc and "Knapp–Hartung" in doc
    assert not re.search(r'(?:src|href)="(?!data:|#)', doc), "a link out of the page"
