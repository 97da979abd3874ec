#include <string.h>

#include "generator/device.h"

extern const struct fl_backend_ops fl_backend_cpu;

/* The backend registry. `emu` and `cuda` join this table in their own issues. */
const struct fl_backend_ops *const fl_backends[] = {
	&fl_backend_cpu,
	NULL,
};

const struct fl_backend_ops *fl_backend_find(const char *name)
{
	for (size_t i = 0; fl_backends[i]; i++)
		if (strcmp(fl_backends[i]->name, name) == 0)
			return fl_backends[i];
	return NULL;
}
