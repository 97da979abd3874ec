/* launch.c — what a run needs before the harness starts: its output folder
 * (created with its parents, checked writable) and, for a multi-rank run,
 * faultline started again under mpirun with the project's flags (see
 * harness.h). */
#include "generator/harness.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum fl_status fl_prepare_out_dir(const char *dir)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return fl_error(FL_EINPUT, "output directory '%s': path too long", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return fl_error(FL_ERUNTIME, "cannot create output directory '%s': %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return fl_error(FL_ERUNTIME, "cannot create output directory '%s': %s", buf, strerror(errno));
	struct stat stt;
	if (stat(buf, &stt) != 0 || !S_ISDIR(stt.st_mode))
		return fl_error(FL_ERUNTIME, "output directory '%s': not a directory", dir);
	if (access(buf, W_OK | X_OK) != 0)
		return fl_error(FL_ERUNTIME, "cannot write to output directory '%s': %s", dir, strerror(errno));
	return FL_OK;
}

enum fl_status fl_mpirun(int ranks, char **args, int nargs, int exec)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return fl_error(FL_ERUNTIME, "cannot find the faultline binary to start under mpirun: %s", strerror(errno));
	self[n] = '\0';
	char np[16];
	snprintf(np, sizeof(np), "%d", ranks);
	char **argv = calloc((size_t)nargs + 20, sizeof(char *));
	int k = 0;
	argv[k++] = "mpirun";
	if (geteuid() == 0)
		argv[k++] = "--allow-run-as-root";
	/* ranks may outnumber cores; no pinning, so throttled ranks can yield their core */
	argv[k++] = "--oversubscribe";
	argv[k++] = "--bind-to";
	argv[k++] = "none";
	argv[k++] = "--mca";
	argv[k++] = "btl";
	argv[k++] = "self,vader";
	argv[k++] = "--mca";
	argv[k++] = "btl_vader_single_copy_mechanism";
	argv[k++] = "none";
	argv[k++] = "-np";
	argv[k++] = np;
	argv[k++] = self;
	for (int i = 0; i < nargs; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	fflush(stdout);
	fflush(stderr);
	if (exec) {
		execvp("mpirun", argv);
		int e = errno;
		free(argv);
		return fl_error(FL_ERUNTIME, "cannot start mpirun for a %d-rank run: %s (install openmpi-bin)", ranks, strerror(e));
	}
	pid_t pid;
	int rc = posix_spawnp(&pid, "mpirun", NULL, NULL, argv, environ);
	free(argv);
	if (rc != 0)
		return fl_error(FL_ERUNTIME, "cannot start mpirun for a %d-rank run: %s (install openmpi-bin)", ranks, strerror(rc));
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return FL_OK;
	if (WIFEXITED(status))
		return fl_error(WEXITSTATUS(status) <= 4 ? (enum fl_status)WEXITSTATUS(status) : FL_ERUNTIME,
				"the %d-rank run under mpirun failed (exit %d)", ranks, WEXITSTATUS(status));
	return fl_error(FL_ERUNTIME, "the %d-rank run under mpirun was killed by signal %d", ranks, WTERMSIG(status));
}
