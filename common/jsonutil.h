/* jsonutil.h — loading small JSON files (scenario, truth, rubric, answer) with
 * errors that name the file, the place and what was expected.
 *
 * Places are key paths such as `faults[1].params.ms`; syntax errors give
 * line:column. Typed getters check the type and return FL_EINPUT with a message
 * like: 'r7.json': faults[0].params.ms: expected a number, got a string.
 */
#ifndef FL_JSONUTIL_H
#define FL_JSONUTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/status.h"
#include "common/strbuf.h"

/* Parse text (len bytes) named `what` (a file name for messages). */
enum fl_status fl_json_parse(const char *what, const char *text, size_t len, cJSON **out);
/* Read and parse a file. */
enum fl_status fl_json_load(const char *path, cJSON **out);

/* The JSON type of an item in words ("a number", "an object", ...). */
const char *fl_json_type_name(const cJSON *item);

/* Reject keys of obj that are not in `allowed` (NULL-terminated). `file` and
 * `place` name where obj is. */
enum fl_status fl_json_check_keys(const char *file, const char *place, const cJSON *obj,
				  const char *const *allowed);

/* Typed getters. `required`: missing key is an error; otherwise *out keeps its value. */
enum fl_status fl_json_get_string(const char *file, const char *place, const cJSON *obj,
				  const char *key, int required, const char **out);
enum fl_status fl_json_get_number(const char *file, const char *place, const cJSON *obj,
				  const char *key, int required, double *out);
enum fl_status fl_json_get_int(const char *file, const char *place, const cJSON *obj,
			       const char *key, int required, long min, long max, long *out);

/* Write a cJSON tree to path atomically, pretty-printed, with a final newline. */
enum fl_status fl_json_write(const char *path, const cJSON *root);

/* Append a cJSON tree to out, pretty-printed, with a final newline. */
void fl_json_print(struct strbuf *out, const cJSON *root);

/* Look up a path in root: names joined by '.', [index], [key=value] (the first
 * array element that is an object whose `key` is the string `value` or the
 * number it spells), ["name"] for a name holding '.', '[' or ']'. Returns the
 * node, or NULL with a reason in why. A rubric's truth: references use this
 * syntax (grader/grading/refs.h). */
const cJSON *fl_json_path(const cJSON *root, const char *path, char *why, size_t whysz);

#endif
