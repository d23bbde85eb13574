//! backstop as a Model Context Protocol server: its API as tools an agent calls.
//!
//! - `backend`: where tool calls go (an API request and its JSON answer)
//! - `remote`: a running service over the network, with one API key
//! - `schema`: tool input schemas taken from the service's OpenAPI document
//! - `tools`: the tools and the API request each call becomes
//! - `lines`: the one line of text each result carries for an LLM
//! - `handler`: the MCP server itself, over any backend
//! - `hooks`: agents' tool hooks answered (`backstop hook`, `POST /v1/hooks/{agent}`)
//! - `proxy`: `backstop proxy`, an upstream MCP server behind backstop, every tool call governed
//!
//! The service's router in this process is a backend too; `backstop-server` provides it, and
//! serves this handler at `/mcp`.
#![deny(missing_docs)]

pub mod backend;
pub mod handler;
pub mod hooks;
pub mod lines;
pub mod proxy;
pub mod remote;
pub mod schema;
pub mod tools;

pub use backend::{ApiAnswer, ApiRequest, Backend, BackendError, Method};
pub use handler::BackstopMcp;
pub use remote::Remote;
pub use rmcp;
