//! Marks whether the browser test is asked for (`BACKSTOP_TEST_BROWSER`), so without it the
//! test is reported as ignored, never as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(backstop_browser)");
    println!("cargo::rerun-if-env-changed=BACKSTOP_TEST_BROWSER");
    if std::env::var("BACKSTOP_TEST_BROWSER").is_ok_and(|v| !v.trim().is_empty()) {
        println!("cargo::rustc-cfg=backstop_browser");
    }
}
