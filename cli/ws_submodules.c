/* cli/ws_submodules.c: what `workspace create` and `workspace info` say of submodules. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "include/arborinth.h"

/* The paths of the submodules in state, ", "-separated, on f. */
static void paths_in(FILE *f, const arb_submodule *v, size_t n, const char *state)
{
	const char *sep = "";

	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].state, state)) {
			fprintf(f, "%s%s", sep, cli_q(v[i].path));
			sep = ", ";
		}
}

static size_t count_in(const arb_submodule *v, size_t n, const char *state)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += !strcmp(v[i].state, state);
	return k;
}

void cli_ws_submodules_note(arb_project *p, const arb_workspace *ws)
{
	arb_submodule *v = NULL;
	size_t n = 0;

	if (arb_workspace_submodules(&v, &n, p, ws) < 0) {
		fprintf(stderr, "arborinth: submodules: %s\n", arb_error_last());
		return;
	}
	if (count_in(v, n, "absent")) {
		fprintf(stderr, "arborinth: submodules not initialised in the origin, empty in the "
				"view: ");
		paths_in(stderr, v, n, "absent");
		fprintf(stderr, " (`git submodule update --init` there, then create again)\n");
	}
	if (count_in(v, n, "refused")) {
		fprintf(stderr, "arborinth: submodules whose .gitmodules name would leave "
				".git/modules, refused, empty in the view: ");
		paths_in(stderr, v, n, "refused");
		fputc('\n', stderr);
	}
	arb_submodules_free(v, n);
}

void cli_ws_submodules_print(arb_project *p, const arb_workspace *ws)
{
	arb_submodule *v = NULL;
	size_t n = 0;

	if (arb_workspace_submodules(&v, &n, p, ws) < 0) {
		printf("submodules: unknown (%s)\n", cli_q(arb_error_last()));
		return;
	}
	for (size_t i = 0; i < n; i++)
		printf("%s %s %.12s %s\n", i ? "         " : "submodule:", cli_q(v[i].path),
		       v[i].commit,
		       !strcmp(v[i].state, "present") ? "(in the view)"
		       : !strcmp(v[i].state, "absent")
			   ? "(empty: not initialised in the origin)"
			   : "(empty: its name would leave .git/modules, refused)");
	arb_submodules_free(v, n);
}

json_t *cli_ws_submodules_json(arb_project *p, const arb_workspace *ws)
{
	arb_submodule *v = NULL;
	json_t *arr;
	size_t n = 0;

	if (arb_workspace_submodules(&v, &n, p, ws) < 0 || !(arr = json_array())) {
		arb_submodules_free(v, n);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:o,s:o,s:s,s:s}", "path",
						     util_json_bytes(v[i].path), "name",
						     util_json_bytes(v[i].name), "commit",
						     v[i].commit, "state", v[i].state));
	arb_submodules_free(v, n);
	return arr;
}
