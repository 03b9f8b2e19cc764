"""Pure folds of the log into state. Only ``store`` does I/O."""
