//! The leaderboard page in a real browser: headless Chromium loads index.html (built from the
//! synthetic fixtures, which have data for every chart, and from fixtures with none), and
//! the dumped DOM must show every chart's SVG laid out with a non-empty box and no
//! JavaScript error; a screenshot is taken. The page's own script records both
//! (`data-charts-rendered`, `data-errors`), so no DevTools protocol is needed.
//!
//! Chromium comes from scripts/setup-browser (Debian's `chromium`). Without it the test is
//! skipped with a printed reason, unless TPSBENCH_REQUIRE_BROWSER is set: then it fails.
//! TPSBENCH_CHROMIUM names another binary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TPSBENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium, or `None` after printing why the test is skipped (panics when required).
fn browser_or_skip() -> Option<PathBuf> {
    match chromium() {
        Some(b) => Some(b),
        None if std::env::var_os("TPSBENCH_REQUIRE_BROWSER").is_some() => {
            panic!(
                "TPSBENCH_REQUIRE_BROWSER is set but no Chromium was found (run scripts/setup-browser)"
            )
        }
        None => {
            eprintln!(
                "SKIPPED: no chromium, chromium-browser or google-chrome on PATH \
                 (run scripts/setup-browser, or set TPSBENCH_REQUIRE_BROWSER=1 to make this fail)"
            );
            None
        }
    }
}

/// Runs headless Chromium on `page` with the flags it needs as root in a container.
fn headless(browser: &Path, page: &Path, extra: &[String]) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .expect("chromium runs")
}

fn attr(dom: &str, name: &str) -> Option<String> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    Some(dom[at..].split('"').next()?.to_string())
}

fn build_page(inputs: &[PathBuf], out: &Path) {
    let st = Command::new(env!("CARGO_BIN_EXE_tpsbench"))
        .arg("leaderboard")
        .args(inputs)
        .arg("--out-dir")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// Loads the page, checks the charts and errors, returns the number of charts.
fn check_page(browser: &Path, html: &Path) -> usize {
    let out = headless(browser, html, &["--dump-dom".into()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8(out.stdout).unwrap();
    let svgs = dom.matches("<svg class=\"chart\"").count();
    assert!(svgs > 0, "no chart in the DOM");
    assert_eq!(
        attr(&dom, "data-charts-expected").as_deref(),
        Some(svgs.to_string().as_str()),
        "every chart the page announces is in the DOM"
    );
    assert_eq!(
        attr(&dom, "data-charts-rendered").as_deref(),
        Some(svgs.to_string().as_str()),
        "every chart has a rendered, non-empty box (absent: the page script did not run)"
    );
    assert_eq!(
        attr(&dom, "data-errors").as_deref(),
        Some(""),
        "JavaScript errors on the page"
    );
    svgs
}

#[test]
fn every_chart_renders_in_headless_chromium_without_errors_and_a_screenshot_is_taken() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/leaderboard");
    let dir = tempfile::tempdir().unwrap();

    // Data for every chart.
    let full = dir.path().join("full");
    build_page(std::slice::from_ref(&fixtures), &full);
    let html = std::fs::read_to_string(full.join("index.html")).unwrap();
    assert!(!html.contains("class=\"empty\""));
    assert!(check_page(&browser, &full.join("index.html")) >= 6);

    // A decode test only: three of the four sections are placeholders, and still render.
    let sparse = dir.path().join("sparse");
    build_page(&[fixtures.join("gpu.json")], &sparse);
    let html = std::fs::read_to_string(sparse.join("index.html")).unwrap();
    assert_eq!(html.matches("<g class=\"empty\">").count(), 3);
    assert_eq!(check_page(&browser, &sparse.join("index.html")), 4);

    let png = full.join("leaderboard.png");
    let out = headless(
        &browser,
        &full.join("index.html"),
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1400,2400".into(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        bytes.len() > 20_000,
        "a page, not a blank: {} bytes",
        bytes.len()
    );
}
