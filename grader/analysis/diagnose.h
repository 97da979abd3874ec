/* diagnose.h — name the fault from the trace alone: `faultline diagnose`.
 *
 * Reads the traces of one run (one file per rank) through the streaming
 * reader, builds per-step and per-rank aggregates (steps, spans and the ops
 * under them, op counts, syncs, device busy/compute/comm time and their
 * overlap) and applies one rule per fault family of the catalog
 * (docs/diagnose.md gives every rule's inputs, thresholds and sources).
 * The result is faultline.diagnosis/1:
 *   {schema, traces [{file, rank, steps, device_rows, events}], healthy, findings [{family, score, fix, summary,
 *    evidence {..}, steps [..]?, ranks [..]?}], narration [5 strings],
 *    limits [..] (what could not be assessed, and why)}
 * with findings sorted by score (high first). Only the events are read: the
 * file names, traceName and anything beside the trace never count. */
#ifndef FL_DIAGNOSE_H
#define FL_DIAGNOSE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "common/status.h"

/* Diagnose the traces paths[0..n) (the ranks of one run), comparing with a
 * healthy baseline run base[0..nb) when nb > 0. Errors: FL_EINPUT (a trace
 * cannot be read: named with the byte offset), FL_ERUNTIME. */
enum fl_status fl_diagnose(const char *const *paths, size_t n, const char *const *base, size_t nb,
			   cJSON **out);

/* The diagnosis as text: findings with evidence, then the narration. */
void fl_diagnose_print(FILE *f, const cJSON *diag);

/* The top finding's family ("healthy" when none; "none" when nothing could
 * be assessed: no host events), for self-checks. */
const char *fl_diagnose_top(const cJSON *diag);
/* 1 when a finding names this family. */
int fl_diagnose_has(const cJSON *diag, const char *family);

#endif
