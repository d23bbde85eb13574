//! `backstop proxy`: backstop in the path of every tool call to one upstream MCP server.
//!
//! - `settings`: the upstream and how each tool is governed (`[[proxy]]`, the command's flags)
//! - `upstream`: the upstream server, as its client, started again after it dies
//! - `outcome`: what came back for a call, and the failure report it makes
//! - `govern`: the proxy's questions to backstop (allowed? what now? it worked)
//! - `handler`: the MCP server downstream: pass-through, and each `tools/call` governed

pub mod govern;
pub mod handler;
pub mod outcome;
pub mod settings;
pub mod upstream;

pub use govern::Governor;
pub use handler::{DefaultTask, ProxyServer, TASK_META_KEY};
pub use outcome::operation_of;
pub use settings::{ProxySettings, ToolSettings};
pub use upstream::Upstream;
