//! Integration tests of packs.
//!
//! - `shipped`: every pack in `packs/` parses with no issues, and says what its header claims

mod shipped;
