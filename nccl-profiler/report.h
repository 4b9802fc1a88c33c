/*
 * report.h - the interval's report: one c4client_report built from every
 * communicator's aggregate and handed to the sink (prof_core.sink) or the
 * client session.
 */
#ifndef C4_REPORT_H
#define C4_REPORT_H

#include <stdint.h>

/*
 * Ends the interval at now (the plugin's clock): settles each
 * communicator's late kernel channels, builds the report (numbered
 * ++prof_core.interval_id, starting at prof_core.interval_start_rt), hands it
 * to prof_core.sink, else to prof_core.client, and clears every communicator's
 * per-interval sums.  The report and its arrays are freed before return:
 * a sink copies what it keeps.  Counts prof_core.reports, and
 * prof_core.reports_failed when memory or the client failed (the sums are
 * cleared all the same).  On the aggregation thread only, after a drain;
 * it neither reaps communicators nor moves prof_core.interval_start.
 */
void report_send(uint64_t now);

#endif
