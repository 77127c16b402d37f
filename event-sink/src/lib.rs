//! event-sink (work in progress).
