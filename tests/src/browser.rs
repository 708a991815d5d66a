//! Driving Debian's `chromium` headless for the approval page tests. A missing browser skips
//! the test with a message — unless `FLEETWATCH_REQUIRE_BROWSER=1` (CI), where it fails.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::web_authn::{
    AddVirtualAuthenticatorParams, AuthenticatorId, AuthenticatorProtocol, AuthenticatorTransport,
    EnableParams, VirtualAuthenticatorOptions,
};
use chromiumoxide::page::{Page, ScreenshotParams};
use futures_util::StreamExt;

/// Whether a missing browser must fail the test.
pub fn browser_required() -> bool {
    std::env::var("FLEETWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1")
}

/// The browser executable: `FLEETWATCH_BROWSER`, else the first of the usual names on `PATH`.
pub fn find_browser() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("FLEETWATCH_BROWSER") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
}

/// A headless browser with a fresh profile; closed when dropped.
pub struct TestBrowser {
    /// The browser.
    pub browser: Browser,
    handler: tokio::task::JoinHandle<()>,
    _profile: tempfile::TempDir,
}

/// Launches the browser, or returns `None` (after saying why) when there is none and none is
/// required. With `FLEETWATCH_REQUIRE_BROWSER=1` a missing or broken browser panics.
pub async fn launch(extra_args: &[&str]) -> Option<TestBrowser> {
    let Some(executable) = find_browser() else {
        assert!(
            !browser_required(),
            "FLEETWATCH_REQUIRE_BROWSER=1 but no chromium was found on PATH (apt-get install chromium)"
        );
        eprintln!(
            "SKIPPED: no chromium on PATH; set FLEETWATCH_REQUIRE_BROWSER=1 to make this a failure"
        );
        return None;
    };
    let profile = tempfile::tempdir().expect("profile dir");
    let mut args = vec![
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
    ];
    args.extend_from_slice(extra_args);
    // chromiumoxide writes `--` before each key itself: a flag given whole would reach Chromium
    // as `----flag` and be ignored, so each is handed over as its key and value.
    let flags: Vec<(&str, Vec<&str>)> = args
        .iter()
        .map(|flag| {
            let flag = flag.trim_start_matches('-');
            match flag.split_once('=') {
                Some((key, value)) => (key, vec![value]),
                None => (flag, Vec::new()),
            }
        })
        .collect();
    let args = flags.iter().map(|(key, values)| (*key, values.as_slice()));
    // `disable_default_args` keeps the flag list to exactly ours; the builder adds --headless,
    // --no-sandbox, the debugging port and --user-data-dir.
    let config = BrowserConfig::builder()
        .chrome_executable(&executable)
        .disable_default_args()
        .no_sandbox()
        .user_data_dir(profile.path())
        .window_size(1100, 1400)
        .launch_timeout(Duration::from_secs(60))
        .request_timeout(Duration::from_secs(60))
        .args(args)
        .build()
        .expect("browser config");
    // chromiumoxide asks Chromium for its debugging address with its own HTTP client.
    fleetwatch_signin::tls::install_provider();
    let (browser, mut handler) = Browser::launch(config)
        .await
        .unwrap_or_else(|e| panic!("{} did not start: {e}", executable.display()));
    let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
    Some(TestBrowser {
        browser,
        handler,
        _profile: profile,
    })
}

impl TestBrowser {
    /// A new tab, focused as a person's tab in front is (headless tabs are not, and the
    /// confirm page waits for focus before its button works).
    pub async fn page(&self) -> Page {
        let page = self.browser.new_page("about:blank").await.expect("new tab");
        focus(&page).await;
        page
    }

    /// A new tab in a browser context of its own: its own cookies and storage, as a second
    /// person's browser would have.
    pub async fn page_in_new_context(&self) -> Page {
        use chromiumoxide::cdp::browser_protocol::target::{
            CreateBrowserContextParams, CreateTargetParams,
        };
        let context = self
            .browser
            .create_browser_context(CreateBrowserContextParams::default())
            .await
            .expect("a new browser context");
        let mut params = CreateTargetParams::new("about:blank");
        params.browser_context_id = Some(context);
        let page = self.browser.new_page(params).await.expect("new tab");
        focus(&page).await;
        page
    }

    /// Closes the browser and waits for it.
    pub async fn close(mut self) {
        let _ = self.browser.close().await;
        let _ = self.browser.wait().await;
        self.handler.abort();
    }
}

/// Makes the tab behave as the focused one (`document.hasFocus()` true), as the tab a person
/// is looking at is.
async fn focus(page: &Page) {
    use chromiumoxide::cdp::browser_protocol::emulation::SetFocusEmulationEnabledParams;
    page.execute(SetFocusEmulationEnabledParams::new(true))
        .await
        .expect("Emulation.setFocusEmulationEnabled");
}

/// The confirm page's button, pressed as a person does once the page has been read: a moment
/// after it appears (it works only after about a second on screen), with the pointer moved to
/// it first. Waits for the button to exist.
pub async fn press_confirm(tab: &Page) {
    wait_until(tab, "document.getElementById('passkey')").await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    // From elsewhere on the page, as a hand moves: a press where the pointer already rests
    // sends no movement first, and a press that begins on the disabled button never counts.
    tab.move_mouse(chromiumoxide::layout::Point::new(4.0, 4.0))
        .await
        .expect("move the pointer");
    tab.find_element("#passkey")
        .await
        .expect("the passkey button")
        .click()
        .await
        .expect("click");
}

/// Evaluates a JavaScript expression to a JSON value (`null` while the page is navigating).
pub async fn eval(page: &Page, expression: &str) -> serde_json::Value {
    match page.evaluate(expression).await {
        Ok(result) => result.into_value().unwrap_or(serde_json::Value::Null),
        Err(_) => serde_json::Value::Null,
    }
}

/// Waits for the Approve button of the page in the tab (the approval page, or a stand-in for
/// it) and presses it.
pub async fn press_approve(tab: &Page) {
    wait_until(tab, "document.getElementById('approve')").await;
    tab.find_element("#approve")
        .await
        .expect("approve")
        .click()
        .await
        .expect("click");
}

/// Waits (generously) until a JavaScript condition holds; panics with the page text if not.
pub async fn wait_until(page: &Page, condition: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let expression = format!("document.readyState === 'complete' && !!({condition})");
    while Instant::now() < deadline {
        if eval(page, &expression).await == serde_json::Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = eval(page, "document.body ? document.body.innerText : ''").await;
    panic!("timed out waiting for {condition}; the page says: {text}");
}

/// The page's visible text.
pub async fn text(page: &Page) -> String {
    eval(page, "document.body ? document.body.innerText : ''")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Saves a full-page screenshot and prints its path.
pub async fn screenshot(page: &Page, path: &std::path::Path) {
    page.save_screenshot(ScreenshotParams::builder().full_page(true).build(), path)
        .await
        .expect("screenshot");
    println!("screenshot: {}", path.display());
}

/// Gives the tab a platform authenticator (Chromium's virtual one, DevTools `WebAuthn`) that
/// verifies the user and is always touched; returns its ID.
pub async fn virtual_authenticator(tab: &Page) -> AuthenticatorId {
    authenticator(tab, true).await
}

/// [`virtual_authenticator`] that keeps passkeys on itself (discoverable credentials) only
/// when `keeps` is true.
pub async fn authenticator(tab: &Page, keeps: bool) -> AuthenticatorId {
    tab.execute(EnableParams::default())
        .await
        .expect("WebAuthn.enable");
    let options = VirtualAuthenticatorOptions::builder()
        .protocol(AuthenticatorProtocol::Ctap2)
        .transport(AuthenticatorTransport::Internal)
        .has_resident_key(keeps)
        .has_user_verification(true)
        .is_user_verified(true)
        .automatic_presence_simulation(true)
        .build()
        .expect("options");
    tab.execute(AddVirtualAuthenticatorParams::new(options))
        .await
        .expect("WebAuthn.addVirtualAuthenticator")
        .result
        .authenticator_id
}
