//! How Fleetwatch reads an operator's question and words what it knows about a fleet.
//!
//! Two answerers speak to the operator without a hosted model: the assistant's keyword
//! answerer and the simulator's rule-based stand-in for the model API. They must judge a
//! question and a fleet the same way, so that judgement lives here once:
//!
//! * [`lang`]: which language a question is in, and its words;
//! * [`question`]: which read question it asks;
//! * [`tokens`]: words and numbers as room names use them;
//! * [`rooms`]: which device a question names, or why none or several fit;
//! * [`firmware`]: version order, firmware lines, the newest per line, who is behind;
//! * [`warnings`] and [`state`]: what a warning is about and how it and a device's state read;
//! * [`triage`]: what needs attention, and how urgently;
//! * [`time`]: durations, clock times and events, relative to a given now;
//! * [`shown`]: fleet-supplied text made safe to print.
//!
//! Each answerer keeps its own sentences; what they say about a room comes from here.
//!
//! Hazard: every name, label and title in a fleet is written by whoever runs it. Nothing here
//! lets such text choose what happens next, and everything that prints it goes through
//! [`shown`].
#![forbid(unsafe_code)]

pub mod firmware;
pub mod lang;
pub mod question;
pub mod rooms;
pub mod shown;
pub mod state;
pub mod time;
pub mod tokens;
pub mod triage;
pub mod warnings;

pub use lang::Lang;
