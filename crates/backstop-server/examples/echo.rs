//! A bare axum JSON echo on the same runtime settings as `backstop serve`: the baseline the
//! load benchmark (`bench/serve-load.sh`) compares backstop's routes with.
//!
//! `cargo run --release -p backstop-server --example echo -- 127.0.0.1:7700`

use axum::Json;
use axum::routing::post;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7700".to_owned());
    let app = axum::Router::new().route(
        "/echo",
        post(|Json(body): Json<serde_json::Value>| async move { Json(body) }),
    );
    let listener = tokio::net::TcpListener::bind(&address).await?;
    axum::serve(listener, app).await
}
