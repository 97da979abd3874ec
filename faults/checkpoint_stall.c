/* checkpoint_stall — a synchronous checkpoint: every Nth step the loop stops to
 * save the model before it goes on. The real weights are copied device-to-host
 * (the host waits for each copy), written to a file `copies` times over (the
 * weights and, as an optimizer's moments would be, more state of their size)
 * and fsync'ed, all inside a span the scenario names. Nothing else is queued
 * meanwhile: the device idles and the step is long.
 *
 * The file lives in the run's scratch folder (never in the output folder the
 * learner gets). At init the host buffer is touched and the file written and
 * fsync'ed once, so the first checkpoint of the window costs what the others
 * do, not the extra of first-touch pages and a new file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults/fault.h"

static const struct fl_param_spec params[] = {
	{"every", FL_PARAM_INT, 4, 1, 1000000, NULL, "steps", "a checkpoint every `every` steps"},
	{"offset", FL_PARAM_INT, 3, 0, 999999, NULL, "steps", "checkpoint in steps with step % every == offset"},
	{"copies", FL_PARAM_INT, 3, 1, 64, NULL, "copies",
	 "the weights are written this many times per checkpoint (weights plus optimizer state: 3 for Adam)"},
	{"span", FL_PARAM_STRING, 0, 0, 0, "checkpoint", NULL, "name of the span the checkpoint runs in"},
};

struct ckpt_state {
	char path[PATH_MAX];
	unsigned char *buf;     /* host copy of every weight, back to back */
	size_t bytes;           /* one copy of the weights */
	int copies;
	const struct fl_services *svc;
	/* the last save */
	size_t written;         /* bytes written and fsync'ed */
	double copy_ms;         /* device-to-host part */
	int err;                /* errno of a failed write, 0 if none */
};

/* Write all of buf to fd; returns the bytes written (short on an error). */
static size_t write_all(int fd, const unsigned char *buf, size_t n, int *err)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			*err = w < 0 ? errno : EIO;
			break;
		}
		done += (size_t)w;
	}
	return done;
}

/* One checkpoint: weights to the host, then to the file, then to the disk. */
static void save(void *arg)
{
	struct ckpt_state *s = arg;
	size_t n, off = 0;
	struct fl_tensor *const *w = fl_svc_weights(s->svc, &n);
	uint64_t t0 = fl_clock_ticks();
	for (size_t i = 0; i < n && off + w[i]->bytes <= s->bytes; i++) {
		fl_svc_to_host(s->svc, s->buf + off, w[i]);
		off += w[i]->bytes;
	}
	s->copy_ms = (double)fl_clock_delta_ns(t0, fl_clock_ticks()) / 1e6;
	s->written = 0;
	s->err = 0;
	int fd = open(s->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		s->err = errno;
		return;
	}
	size_t total = 0;
	for (int c = 0; c < s->copies && !s->err; c++)
		total += write_all(fd, s->buf, s->bytes, &s->err);
	if (fsync(fd) != 0 && !s->err)
		s->err = errno;
	if (close(fd) != 0 && !s->err)
		s->err = errno;
	s->written = s->err ? 0 : total;
}

static enum fl_status init(struct fl_fault *f, const struct fl_fault_env *env)
{
	if (fl_fault_num(f, "offset") >= fl_fault_num(f, "every"))
		return fl_error(FL_EINPUT, "fault '%s': offset %g must be below every %g", f->ops->name,
				fl_fault_num(f, "offset"), fl_fault_num(f, "every"));
	size_t n;
	struct fl_tensor *const *w = fl_svc_weights(env->svc, &n);
	if (n == 0)
		return fl_error(FL_EINPUT, "fault '%s': the model has no weights to save", f->ops->name);
	struct ckpt_state *s = calloc(1, sizeof(*s));
	if (!s)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory", f->ops->name);
	f->state = s;
	s->svc = env->svc;
	s->copies = (int)fl_fault_num(f, "copies");
	for (size_t i = 0; i < n; i++)
		s->bytes += w[i]->bytes;
	if (snprintf(s->path, sizeof(s->path), "%s/state-rank-%d.bin", env->svc->scratch_dir, env->rank) >=
	    (int)sizeof(s->path)) {
		s->path[0] = '\0';
		return fl_error(FL_ERUNTIME, "fault '%s': scratch path too long", f->ops->name);
	}
	s->buf = malloc(s->bytes);
	if (!s->buf)
		return fl_error(FL_ERUNTIME, "fault '%s': out of memory for a %zu-byte checkpoint buffer", f->ops->name,
				s->bytes);
	memset(s->buf, 0, s->bytes); /* first-touch page faults now, not in the window */
	enum fl_status st = fl_svc_declare_span(env->svc, fl_fault_str(f, "span"));
	if (st)
		return st;
	save(s); /* warm: the file exists, its blocks and the write path have been used once */
	if (s->err)
		return fl_error(FL_ERUNTIME, "fault '%s': cannot write the checkpoint file '%s': %s", f->ops->name, s->path,
				strerror(s->err));
	return FL_OK;
}

static void step_end(struct fl_fault *f, struct fl_step_ctx *ctx)
{
	struct ckpt_state *s = f->state;
	if (ctx->step % (long)fl_fault_num(f, "every") != (long)fl_fault_num(f, "offset"))
		return;
	const char *span = fl_fault_str(f, "span");
	uint64_t t0 = fl_clock_ticks();
	fl_svc_run_span(ctx->svc, span, save, s);
	uint64_t t1 = fl_clock_ticks();
	/* requested: the megabytes to save; measured: what reached the disk */
	struct fl_instance *in = fl_fault_report(f, ctx, span, (double)s->bytes * s->copies / 1e6,
						 (double)s->written / 1e6, "MB");
	if (in) {
		in->extra_name[0] = "measured_ms";
		in->extra[0] = (double)fl_clock_delta_ns(t0, t1) / 1e6;
		in->extra_name[1] = "copy_ms";
		in->extra[1] = s->copy_ms;
	}
}

static void release(struct fl_fault *f)
{
	struct ckpt_state *s = f->state;
	if (!s)
		return;
	if (s->path[0])
		unlink(s->path);
	free(s->buf);
	free(s);
	f->state = NULL;
}

const struct fl_fault_ops fl_fault_checkpoint_stall = {
	.name = "checkpoint_stall",
	.summary = "synchronous checkpoint: every Nth step the weights are copied to the host, written and fsync'ed",
	.family = "checkpoint_stall",
	.fix = "async_checkpoint",
	.backends = "cpu emu cuda",
	.params = params,
	.n_params = sizeof(params) / sizeof(params[0]),
	.init = init,
	.step_end = step_end,
	.release = release,
};
