"""The fault-injection suite: real processes under crashes, cut connections and database faults."""
