#include "grader/grading/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "grader/grading/units.h"

/* ---- shared ---- */

static const char *state_name(enum fl_grade_state s)
{
	switch (s) {
	case FL_GRADE_GRADED: return "graded";
	case FL_GRADE_UNPARSEABLE: return "unparseable";
	case FL_GRADE_CONFIG_ERROR: return "config_error";
	case FL_GRADE_USAGE_ERROR: return "usage_error";
	}
	return "unknown";
}

static const char *title_of(const struct fl_grade *g)
{
	return g->have_rubric && g->rubric.title ? g->rubric.title : g->scenario ? g->scenario : "faultline exercise";
}

static const char *suite_of(const struct fl_grade *g)
{
	return g->have_rubric && g->rubric.name ? g->rubric.name : g->scenario ? g->scenario : "faultline";
}

static double round6(double x) { return round(x * 1e6) / 1e6; }

/* What the learner reads when grading could not run on the instructor's side. */
static const char *const staff_problem =
	"The grader could not grade this submission because of a problem on the course staff's side "
	"(not with your answer). Please tell the course staff.";

static void learner_summary(const struct fl_grade *g, struct strbuf *sb)
{
	char s[64], m[64];
	switch (g->state) {
	case FL_GRADE_GRADED:
		fl_fmt_num(s, sizeof(s), g->score);
		fl_fmt_num(m, sizeof(m), g->max_score);
		strbuf_addf(sb, "%s: %s / %s points (%.0f%%)", title_of(g), s, m, 100 * fl_grade_fraction(g));
		break;
	case FL_GRADE_UNPARSEABLE:
		strbuf_adds(sb, "Your answer could not be read, so it was not graded. Fix the problems below and submit again.");
		break;
	default:
		strbuf_adds(sb, staff_problem);
		break;
	}
}

/* The learner-visible text of one question. */
static void question_text(const struct fl_grade *g, const struct fl_grade_item *it, struct strbuf *sb)
{
	strbuf_adds(sb, it->v.feedback.buf ? it->v.feedback.buf : "");
	if (g->reveal && it->v.key.len)
		strbuf_addf(sb, "\n[key] %s", it->v.key.buf);
}

/* The whole learner-visible report as plain text (the text format, and the
 * output fields of the platform formats). */
static void learner_report(const struct fl_grade *g, struct strbuf *sb)
{
	learner_summary(g, sb);
	strbuf_adds(sb, "\n");
	if (g->state == FL_GRADE_UNPARSEABLE) {
		for (size_t i = 0; i < g->n_format_errors; i++)
			strbuf_addf(sb, "  - %s\n", g->format_errors[i]);
		return;
	}
	if (g->state != FL_GRADE_GRADED)
		return;
	for (size_t i = 0; i < g->n; i++) {
		const struct fl_grade_item *it = &g->items[i];
		char s[64], m[64];
		fl_fmt_num(s, sizeof(s), it->score);
		fl_fmt_num(m, sizeof(m), it->q->points);
		strbuf_addf(sb, "\n%zu. %s [%s/%s] %s\n   ", i + 1, it->q->id, s, m, it->q->prompt);
		struct strbuf t = STRBUF_INIT;
		question_text(g, it, &t);
		for (const char *p = t.buf; p && *p; p++) {
			strbuf_add(sb, p, 1);
			if (*p == '\n')
				strbuf_adds(sb, "   ");
		}
		strbuf_release(&t);
		strbuf_adds(sb, "\n");
	}
	if (g->n_ignored) {
		strbuf_adds(sb, "\nignored answer keys (no question reads them): ");
		for (size_t i = 0; i < g->n_ignored; i++)
			strbuf_addf(sb, "%s%s", i ? ", " : "", g->ignored_keys[i]);
		strbuf_adds(sb, "\n");
	}
}

static void instructor_notes(const struct fl_grade *g, struct strbuf *sb)
{
	if (g->error)
		strbuf_addf(sb, "error: %s\n", g->error);
	for (size_t i = 0; i < g->n; i++) {
		const struct fl_grade_item *it = &g->items[i];
		strbuf_addf(sb, "%s: %s, credit %g; %s%s%s\n", it->q->id, fl_outcome_name(it->v.outcome), it->v.credit,
			    it->v.notes.buf ? it->v.notes.buf : "", it->v.read_as ? "; read as " : "",
			    it->v.read_as ? it->v.read_as : "");
	}
}

/* cJSON strings must be valid UTF-8: every string passes through here. */
static void add_text(cJSON *obj, const char *key, const char *s)
{
	char *c = fl_clean_text(s ? s : "", 1u << 20);
	cJSON_AddStringToObject(obj, key, c);
	free(c);
}

static cJSON *text_item(const char *s)
{
	char *c = fl_clean_text(s ? s : "", 1u << 20);
	cJSON *r = cJSON_CreateString(c);
	free(c);
	return r;
}

/* Markdown (Gradescope's output_format "md"): each line is cleaned as above,
 * then every ASCII punctuation character is backslash-escaped — CommonMark
 * renders an escaped punctuation character as itself, so no learner text can
 * open emphasis, a link, an image, a heading, a list, a table or code, and
 * '<' and '&' are escaped too, so there is no raw HTML or entity. Lines of a
 * paragraph end in a backslash (a hard line break); empty lines separate
 * paragraphs. */
static void md_escape(struct strbuf *sb, const char *s)
{
	for (const char *p = s; *p; p++) {
		if (strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", *p))
			strbuf_add(sb, "\\", 1);
		strbuf_add(sb, p, 1);
	}
}

/* Text for a report field, newlines kept and each line cleaned
 * (fl_clean_text); md: as Markdown (md_escape, and hard line breaks). */
static void add_lines(cJSON *obj, const char *key, const char *s, int md)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = s ? s : "";
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char *line = strndup(p, n);
		if (!line)
			abort();
		char *c = fl_clean_text(line, 1u << 20);
		if (md)
			md_escape(&sb, c);
		else
			strbuf_adds(&sb, c);
		free(c);
		free(line);
		/* Markdown: a hard break inside a paragraph; a plain line end before
		 * an empty line or at the end */
		if (e)
			strbuf_adds(&sb, md && n && e[1] && e[1] != '\n' ? "\\\n" : "\n");
		p += n + (e ? 1 : 0);
	}
	cJSON_AddStringToObject(obj, key, sb.buf ? sb.buf : "");
	strbuf_release(&sb);
}

static void add_multiline(cJSON *obj, const char *key, const char *s) { add_lines(obj, key, s, 0); }

static void add_markdown(cJSON *obj, const char *key, const char *s) { add_lines(obj, key, s, 1); }

static void print_json(cJSON *root, struct strbuf *out)
{
	fl_json_print(out, root);
	cJSON_Delete(root);
}

/* ---- text ---- */

static void write_text(const struct fl_grade *g, struct strbuf *out)
{
	learner_report(g, out);
	if (g->reveal) {
		strbuf_adds(out, "\ninstructor notes:\n");
		instructor_notes(g, out);
		if (g->truth && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g->truth, "traces")) > 0) {
			strbuf_adds(out, "\nworked answer (faultline diagnose of the trace):\n");
			fl_grade_diagnosis_text(g, out);
		}
	} else if (g->error && g->state != FL_GRADE_GRADED) {
		strbuf_addf(out, "\n(details on standard error)\n");
	}
}

/* ---- faultline.grade/1 ---- */

static void write_json(const struct fl_grade *g, struct strbuf *out)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "faultline.grade/1");
	cJSON_AddStringToObject(root, "state", state_name(g->state));
	cJSON_AddBoolToObject(root, "gradable", g->state == FL_GRADE_GRADED);
	add_text(root, "scenario", g->scenario);
	add_text(root, "rubric", g->rubric_name);
	add_text(root, "truth", g->truth_name);
	add_text(root, "answer", g->answer_name);
	cJSON_AddNumberToObject(root, "score", g->state == FL_GRADE_GRADED ? round6(g->score) : 0);
	cJSON_AddNumberToObject(root, "max_score", round6(g->max_score));
	cJSON_AddNumberToObject(root, "fraction", round6(fl_grade_fraction(g)));
	cJSON_AddBoolToObject(root, "revealed", g->reveal);
	cJSON *fe = cJSON_AddArrayToObject(root, "format_errors");
	for (size_t i = 0; i < g->n_format_errors; i++)
		cJSON_AddItemToArray(fe, text_item(g->format_errors[i]));
	cJSON *ig = cJSON_AddArrayToObject(root, "ignored_keys");
	for (size_t i = 0; i < g->n_ignored; i++)
		cJSON_AddItemToArray(ig, text_item(g->ignored_keys[i]));
	if (g->error)
		add_text(root, "error", g->error);
	cJSON_AddNumberToObject(root, "elapsed_s", round6(g->elapsed_s));
	cJSON *qs = cJSON_AddArrayToObject(root, "questions");
	for (size_t i = 0; g->state == FL_GRADE_GRADED && i < g->n; i++) {
		const struct fl_grade_item *it = &g->items[i];
		cJSON *q = cJSON_CreateObject();
		add_text(q, "id", it->q->id);
		add_text(q, "prompt", it->q->prompt);
		cJSON_AddStringToObject(q, "kind", it->q->kind->name);
		cJSON_AddStringToObject(q, "visibility", it->q->visibility);
		cJSON_AddNumberToObject(q, "points", it->q->points);
		cJSON_AddNumberToObject(q, "score", it->score);
		cJSON_AddNumberToObject(q, "credit", it->v.credit);
		cJSON_AddStringToObject(q, "outcome", fl_outcome_name(it->v.outcome));
		if (it->answer_key)
			add_text(q, "answer_key", it->answer_key);
		else
			cJSON_AddNullToObject(q, "answer_key");
		if (it->v.read_as)
			add_text(q, "read_as", it->v.read_as);
		else
			cJSON_AddNullToObject(q, "read_as");
		add_text(q, "feedback", it->v.feedback.buf);
		add_text(q, "instructor_notes", it->v.notes.buf);
		if (g->reveal)
			add_text(q, "key", it->v.key.buf);
		cJSON_AddItemToArray(qs, q);
	}
	print_json(root, out);
}

/* ---- Gradescope results.json ---- */

static void write_gradescope(const struct fl_grade *g, struct strbuf *out)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddNumberToObject(root, "score", g->state == FL_GRADE_GRADED ? round6(g->score) : 0);
	cJSON_AddNumberToObject(root, "execution_time", round6(g->elapsed_s));
	struct strbuf sb = STRBUF_INIT;
	learner_summary(g, &sb);
	if (g->state == FL_GRADE_UNPARSEABLE) {
		strbuf_adds(&sb, "\n");
		for (size_t i = 0; i < g->n_format_errors; i++)
			strbuf_addf(&sb, "- %s\n", g->format_errors[i]);
	}
	if (g->state == FL_GRADE_GRADED && g->n_ignored) {
		strbuf_adds(&sb, "\nIgnored answer keys (no question reads them): ");
		for (size_t i = 0; i < g->n_ignored; i++)
			strbuf_addf(&sb, "%s%s", i ? ", " : "", g->ignored_keys[i]);
	}
	add_markdown(root, "output", sb.buf);
	strbuf_release(&sb);
	cJSON_AddStringToObject(root, "output_format", "md");
	cJSON_AddStringToObject(root, "visibility", "visible");
	cJSON_AddStringToObject(root, "stdout_visibility", "hidden");
	cJSON *tests = cJSON_AddArrayToObject(root, "tests");
	for (size_t i = 0; g->state == FL_GRADE_GRADED && i < g->n; i++) {
		const struct fl_grade_item *it = &g->items[i];
		cJSON *t = cJSON_CreateObject();
		char name[300], num[32];
		snprintf(name, sizeof(name), "%s: %s", it->q->id, it->q->prompt);
		snprintf(num, sizeof(num), "%zu", i + 1);
		add_text(t, "name", name);
		cJSON_AddStringToObject(t, "number", num);
		cJSON_AddNumberToObject(t, "score", it->score);
		cJSON_AddNumberToObject(t, "max_score", it->q->points);
		cJSON_AddStringToObject(t, "status", it->v.outcome == FL_OUT_CORRECT ? "passed" : "failed");
		struct strbuf o = STRBUF_INIT;
		question_text(g, it, &o);
		add_markdown(t, "output", o.buf);
		cJSON_AddStringToObject(t, "output_format", "md");
		strbuf_release(&o);
		cJSON *tags = cJSON_AddArrayToObject(t, "tags");
		cJSON_AddItemToArray(tags, cJSON_CreateString(it->q->kind->name));
		cJSON_AddItemToArray(tags, cJSON_CreateString(fl_outcome_name(it->v.outcome)));
		cJSON_AddStringToObject(t, "visibility", it->q->visibility);
		cJSON_AddItemToArray(tests, t);
	}
	/* instructor notes: a hidden test worth nothing (learners never see hidden tests) */
	struct strbuf notes = STRBUF_INIT;
	instructor_notes(g, &notes);
	if (notes.len) {
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", "instructor notes (hidden)");
		cJSON_AddStringToObject(t, "number", "0");
		cJSON_AddNumberToObject(t, "score", 0);
		cJSON_AddNumberToObject(t, "max_score", 0);
		cJSON_AddStringToObject(t, "status", "passed");
		add_multiline(t, "output", notes.buf);
		cJSON_AddStringToObject(t, "output_format", "text");
		cJSON *tags = cJSON_AddArrayToObject(t, "tags");
		cJSON_AddItemToArray(tags, cJSON_CreateString("instructor"));
		cJSON_AddStringToObject(t, "visibility", "hidden");
		cJSON_AddItemToArray(tests, t);
	}
	strbuf_release(&notes);
	print_json(root, out);
}

/* ---- PrairieLearn results.json ---- */

static void write_prairielearn(const struct fl_grade *g, struct strbuf *out)
{
	cJSON *root = cJSON_CreateObject();
	int gradable = g->state == FL_GRADE_GRADED;
	double score = round(fl_grade_fraction(g) * 1e4) / 1e4;
	score = score < 0 ? 0 : score > 1 ? 1 : score;
	cJSON_AddBoolToObject(root, "succeeded", g->state == FL_GRADE_GRADED || g->state == FL_GRADE_UNPARSEABLE);
	cJSON_AddBoolToObject(root, "gradable", gradable);
	cJSON_AddNumberToObject(root, "score", gradable ? score : 0);
	struct strbuf sb = STRBUF_INIT;
	learner_summary(g, &sb);
	add_text(root, "message", sb.buf);
	strbuf_reset(&sb);
	learner_report(g, &sb);
	add_multiline(root, "output", sb.buf);
	strbuf_release(&sb);
	cJSON *fe = cJSON_AddArrayToObject(root, "format_errors");
	for (size_t i = 0; i < g->n_format_errors; i++)
		cJSON_AddItemToArray(fe, text_item(g->format_errors[i]));
	if (g->state == FL_GRADE_CONFIG_ERROR || g->state == FL_GRADE_USAGE_ERROR)
		cJSON_AddItemToArray(fe, cJSON_CreateString(staff_problem));
	cJSON *tests = cJSON_AddArrayToObject(root, "tests");
	for (size_t i = 0; gradable && i < g->n; i++) {
		const struct fl_grade_item *it = &g->items[i];
		if (!strcmp(it->q->visibility, "hidden"))
			continue;
		cJSON *t = cJSON_CreateObject();
		add_text(t, "name", it->q->id);
		add_text(t, "description", it->q->prompt);
		cJSON_AddNumberToObject(t, "points", it->score);
		cJSON_AddNumberToObject(t, "max_points", it->q->points);
		cJSON_AddStringToObject(t, "message", fl_outcome_name(it->v.outcome));
		struct strbuf o = STRBUF_INIT;
		question_text(g, it, &o);
		add_multiline(t, "output", o.buf);
		strbuf_release(&o);
		cJSON_AddItemToArray(tests, t);
	}
	print_json(root, out);
}

/* ---- JUnit XML ---- */

static void xml_text(struct strbuf *out, const char *s)
{
	char *c = fl_clean_text(s ? s : "", 1u << 20); /* valid UTF-8, no control characters */
	for (const char *p = c; *p; p++) {
		switch (*p) {
		case '&': strbuf_adds(out, "&amp;"); break;
		case '<': strbuf_adds(out, "&lt;"); break;
		case '>': strbuf_adds(out, "&gt;"); break;
		case '"': strbuf_adds(out, "&quot;"); break;
		case '\'': strbuf_adds(out, "&apos;"); break;
		default: strbuf_add(out, p, 1); break;
		}
	}
	free(c);
}

/* Multi-line element text: lines cleaned one by one, newlines kept. */
static void xml_lines(struct strbuf *out, const char *s)
{
	const char *p = s ? s : "";
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char *line = strndup(p, n);
		if (!line)
			abort();
		xml_text(out, line);
		free(line);
		if (e)
			strbuf_adds(out, "\n");
		p += n + (e ? 1 : 0);
	}
}

static void write_junit(const struct fl_grade *g, struct strbuf *out)
{
	size_t tests = 0, failures = 0, errors = 0;
	if (g->state == FL_GRADE_GRADED) {
		tests = g->n;
		for (size_t i = 0; i < g->n; i++)
			failures += g->items[i].v.outcome != FL_OUT_CORRECT;
	} else if (g->state == FL_GRADE_UNPARSEABLE) {
		tests = failures = 1;
	} else {
		tests = errors = 1;
	}
	char time[32], s[64], m[64];
	snprintf(time, sizeof(time), "%.6f", g->elapsed_s);
	strbuf_adds(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	strbuf_addf(out, "<testsuites name=\"faultline grade\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" "
		    "time=\"%s\">\n", tests, failures, errors, time);
	strbuf_adds(out, "  <testsuite name=\"");
	xml_text(out, suite_of(g));
	strbuf_addf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" time=\"%s\">\n", tests, failures,
		    errors, time);
	fl_fmt_num(s, sizeof(s), g->state == FL_GRADE_GRADED ? g->score : 0);
	fl_fmt_num(m, sizeof(m), g->max_score);
	strbuf_addf(out, "    <properties>\n      <property name=\"score\" value=\"%s\"/>\n"
		    "      <property name=\"max_score\" value=\"%s\"/>\n      <property name=\"state\" value=\"%s\"/>\n"
		    "    </properties>\n", s, m, state_name(g->state));
	if (g->state == FL_GRADE_GRADED) {
		for (size_t i = 0; i < g->n; i++) {
			const struct fl_grade_item *it = &g->items[i];
			fl_fmt_num(s, sizeof(s), it->score);
			fl_fmt_num(m, sizeof(m), it->q->points);
			strbuf_adds(out, "    <testcase name=\"");
			xml_text(out, it->q->id);
			strbuf_addf(out, " (%s/%s points)\" classname=\"faultline.", s, m);
			xml_text(out, suite_of(g));
			strbuf_addf(out, "\" time=\"0\" weight=\"%s\"", m);
			struct strbuf t = STRBUF_INIT;
			question_text(g, it, &t);
			if (it->v.outcome == FL_OUT_CORRECT) {
				strbuf_adds(out, ">\n      <system-out>");
				xml_lines(out, t.buf);
				strbuf_adds(out, "</system-out>\n    </testcase>\n");
			} else {
				strbuf_adds(out, ">\n      <failure type=\"");
				strbuf_adds(out, fl_outcome_name(it->v.outcome));
				strbuf_adds(out, "\" message=\"");
				xml_text(out, t.buf);
				strbuf_adds(out, "\">");
				xml_lines(out, t.buf);
				strbuf_adds(out, "</failure>\n    </testcase>\n");
			}
			strbuf_release(&t);
		}
	} else {
		struct strbuf t = STRBUF_INIT;
		learner_report(g, &t);
		int unparseable = g->state == FL_GRADE_UNPARSEABLE;
		strbuf_addf(out, "    <testcase name=\"%s\" classname=\"faultline.", unparseable ? "answer file" : "grading");
		xml_text(out, suite_of(g));
		strbuf_addf(out, "\" time=\"0\">\n      <%s type=\"%s\" message=\"", unparseable ? "failure" : "error",
			    unparseable ? "format_error" : state_name(g->state));
		xml_text(out, unparseable ? "the answer could not be read" : "grading failed");
		strbuf_adds(out, "\">");
		xml_lines(out, t.buf);
		strbuf_addf(out, "</%s>\n    </testcase>\n", unparseable ? "failure" : "error");
		strbuf_release(&t);
	}
	strbuf_adds(out, "  </testsuite>\n</testsuites>\n");
}

/* ---- the table ---- */

static const struct fl_report_format format_text = {
	.name = "text", .summary = "a readable report", .write = write_text};
static const struct fl_report_format format_json = {
	.name = "json", .summary = "faultline.grade/1 JSON", .write = write_json};
static const struct fl_report_format format_gradescope = {
	.name = "gradescope", .summary = "Gradescope results.json", .write = write_gradescope};
static const struct fl_report_format format_prairielearn = {
	.name = "prairielearn", .summary = "PrairieLearn results.json", .write = write_prairielearn};
static const struct fl_report_format format_junit = {
	.name = "junit", .summary = "JUnit XML, one testcase per question", .write = write_junit};

const struct fl_report_format *const fl_report_formats[] = {
	&format_text, &format_json, &format_gradescope, &format_prairielearn, &format_junit, NULL,
};

const struct fl_report_format *fl_report_format_find(const char *name)
{
	for (size_t i = 0; fl_report_formats[i]; i++)
		if (strcmp(fl_report_formats[i]->name, name) == 0)
			return fl_report_formats[i];
	return NULL;
}
