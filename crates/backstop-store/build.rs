//! Marks whether a `PostgreSQL` test database is configured, so the `PostgreSQL` suite is
//! reported as ignored without one, never as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(backstop_postgres)");
    println!("cargo::rerun-if-env-changed=BACKSTOP_TEST_POSTGRES");
    if std::env::var("BACKSTOP_TEST_POSTGRES").is_ok_and(|v| !v.trim().is_empty()) {
        println!("cargo::rustc-cfg=backstop_postgres");
    }
}
