//! Execution: how work runs. The dispatcher fires one pack for one record
//! (`dispatch`, its chain walk in `dispatch::walk`); `flow` and `throttle`
//! pace each connector; `lease` ties running work to a live process; `jobs`
//! drives fan-outs; `refresh` re-fires on schedule; `gone_pages` asks for pages
//! a connector stopped returning.

pub mod dispatch;
pub mod flow;
pub mod gone_pages;
pub mod jobs;
pub mod lease;
pub mod refresh;
pub mod throttle;
