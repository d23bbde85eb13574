//! Marks whether a `PostgreSQL` test database is configured, so the CLI tests that run
//! `serve` on `PostgreSQL` are reported as ignored without one, never as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(backstop_postgres_url)");
    println!("cargo::rerun-if-env-changed=BACKSTOP_TEST_POSTGRES_URL");
    if std::env::var("BACKSTOP_TEST_POSTGRES_URL").is_ok_and(|v| !v.trim().is_empty()) {
        println!("cargo::rustc-cfg=backstop_postgres_url");
    }
}
