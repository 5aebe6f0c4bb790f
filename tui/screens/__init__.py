"""The console's screens: one per view, and the modals."""
