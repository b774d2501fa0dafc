//! Process identity: pid plus start time (in progress).
