/*
 * agents/agents_internal.h: what the agent launchers share (agents/agent.c, the arb_agent API)
 * and what each client defines (agents/claude.c, agents/opencode.c). Private to agents/.
 */
#ifndef ARB_LIB_AGENT_INTERNAL_H
#define ARB_LIB_AGENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/lib_internal.h"

struct jail_box;
struct proxy_proc;
struct launch;

enum launch_auth { LAUNCH_AUTH_KEY, LAUNCH_AUTH_LOGIN, LAUNCH_AUTH_NONE };

struct launch_client {
	const char *name;    /* the command: claude, codex, opencode */
	const char *title;   /* Claude Code, ... */
	const char *program; /* searched on PATH */
	const char *install; /* how to install it, for the error when it is missing */
	const char *backend; /* the proxy backend it needs by default */
	/* Optional, first on the host: chooses the backend (l->backend) and its key source. */
	int (*resolve)(struct launch *l);
	/* On the host, before the box is built: imports settings, adds fixed client args. */
	int (*prepare)(struct launch *l);
	/* On the box: variables and config (after the proxy started; px has the placeholder). */
	int (*box)(struct launch *l, struct jail_box *b, struct proxy_proc *px);
	/* The host login this client can use instead of a key (enum proxy_login_kind, or -1),
	 * the backend that then serves it, the file (caller frees), and how to log in. */
	int login_kind;
	const char *login_backend;
	char *(*login_file)(const struct launch *l);
	const char *login_cmd;
};

/* One launch. Strings not marked owned point into `owned` (the options as given). */
struct launch {
	const struct launch_client *client;
	const char *name, *rev, *client_path, *upstream, *key_file, *model, *provider;
	const char *backend; /* the proxy backend in use (client default or --provider) */
	const char *auth_opt, *token_url; /* --auth, --token-url */
	enum launch_auth auth;		  /* what the launch uses */
	char *login_path;		  /* owned: the host login file, with LAUNCH_AUTH_LOGIN */
	char *ws_home;			  /* owned: the workspace's home/ on the host */
	char *key_env;			  /* owned: the backend's key variable */
	struct lib_proxy_login login;	  /* handed to the proxy with LAUNCH_AUTH_LOGIN */
	bool net, explain, no_tool_managers;
	bool vertex; /* --vertex: the vertex backend, a token minted from the host's ADC */
	const char *limits[5]; /* --timeout, --memory, --cpus, --pids, --inotify as given */
	int tcp_fd;	       /* with --net: the proxy's listener on the host's loopback, or -1 */
	uint16_t tcp_port;     /* ... and its port, the backend's (port= in its spec) */
	int tcp_tls_fd;	       /* with --net: the listener for the backend's TLS port, or -1 */
	const char **grants, **binds, **mounts, **envs;
	size_t n_grants, n_binds, n_mounts, n_envs;
	char **client_args; /* after `--` */
	int n_client_args;
	char **owned; /* copies of the options' values (arb_agent_set) */
	size_t n_owned;
	char *exe;	    /* owned: the client's real path on the host */
	char *mount_root;   /* owned: what is bound read-only for it, or NULL */
	char *host_home;    /* owned: the host's $HOME */
	char *model_import; /* owned: the model chosen by --model or the host's settings, or NULL */
	char **fixed_args;  /* owned, NULL-terminated: client args put before the user's */
	size_t n_fixed;
	/* Set by the client's resolve (owned): the backend's name when it is not a built-in
	 * one, more options for its specification (",KEY=VALUE..."), its upstream (when not
	 * --upstream; l->upstream points to it), where its key comes
	 * from when not the variable or --api-key-file (for --explain), and the client's own
	 * settings for the box. */
	char *backend_own, *backend_opts, *key_source, *upstream_own;
	char *key_hint; /* owned: where else a key was looked for, for the no-credential error */
	json_t *client_conf;
	/* Set by launch_mcp: what it says of the host's MCP servers (owned, NULL-terminated),
	 * and for OpenCode the servers for the box's config (else they are fixed args). */
	char **mcp_notes;
	size_t n_mcp_notes;
	json_t *mcp_box;
	char *credential_note;	 /* owned: "credential: ..." (never a secret) */
	bool missing_credential; /* --explain without one: shown as --auth none */
	arb_project *project;	 /* borrowed: where the workspace is */
	bool prepared;
};

/* --vertex (agent_vertex.c): the project and region from the host's variables (or NULL);
 * the backend "vertex" with them (-EINVAL naming a missing one); Claude Code's variables. */
const char *launch_vertex_project(void);
const char *launch_vertex_region(void);
int launch_vertex_resolve(struct launch *l) ARB_MUST_CHECK;
int launch_vertex_claude_env(const struct launch *l, struct jail_box *b) ARB_MUST_CHECK;
/* opencode --vertex (opencode_vertex.c): the model (-EINVAL: not of the provider) and a
 * check that the client bundles the provider (-ENOPKG); the box's google-vertex-anthropic
 * provider at the relay URL (".../v1") whose google-auth-library gets key as its token. */
int launch_opencode_vertex_resolve(struct launch *l) ARB_MUST_CHECK;
json_t *launch_opencode_vertex_provider(const struct launch *l, const char *url, const char *key);
const char *launch_opencode_vertex_id(void);

/* Appends one owned copy of arg to l->fixed_args. -ENOMEM. */
int launch_fixed_arg(struct launch *l, const char *arg);
/*
 * Writes the proxy's login file for the box at ws_home/SUB/NAME (mode 0600), never following
 * a symlink the box may have planted there. -errno with a message.
 */
int launch_write_box_login(const struct launch *l, struct proxy_proc *px, const char *sub,
			   const char *name);
/*
 * Sets the members of `add` in the JSON object file ws_home/SUB/NAME (created when missing or
 * not a JSON object; mode 0600), never following a link. -errno with a message.
 */
int launch_box_json_merge(const struct launch *l, const char *sub, const char *name, json_t *add);
/*
 * The backend specification the launch uses (caller frees): its name, --upstream, what the
 * client's resolve added, the credential's kind, and with --net its port.
 */
char *launch_backend_spec(const struct launch *l);
/* Appends ",KEY=VALUE" to l->backend_opts. -EINVAL when VALUE holds a ',' (the separator). */
int launch_backend_opt(struct launch *l, const char *key, const char *value);
/* With --net: the key file (the session's token) in the box, for l->backend (caller frees). */
char *launch_key_file(const struct launch *l);

/* A model name safe to pass on: letters, digits and . _ - / : @ [ ] only. */
bool launch_model_ok(const char *m);
/* The string member `key` of the JSON file at path, or NULL (missing, unreadable, other). */
char *launch_json_file_string(const char *path, const char *key);
/* Replaces l->model_import by model (owned; NULL: none). Returns 0. */
int launch_set_model(struct launch *l, char *model);
/* $HOME/SUB made in the box (in the workspace's home, so it persists): *dir its path. */
int launch_home_dir(struct jail_box *b, const char *sub, const char *client,
		    char **dir) ARB_MUST_CHECK;

/*
 * The host client's local MCP servers that the bind files' mcp = [...] name, for the box
 * (agents/mcp.c): fixed args (Claude Code --mcp-config, Codex -c mcp_servers.NAME) or
 * l->mcp_box (OpenCode), and l->mcp_notes. l->project is the origin (Claude Code's local
 * scope). -errno with a message (a bind file that does not load, a host config that is not
 * TOML).
 */
int launch_mcp(struct launch *l) ARB_MUST_CHECK;
/* The host's OpenCode config, merged as OpenCode does (never NULL but on ENOMEM); *source:
 * the last file of it that declares MCP servers, or NULL (caller frees). */
json_t *launch_opencode_host_config(const struct launch *l, char **source);

extern const struct launch_client launch_claude, launch_codex, launch_opencode;

/*
 * After a run (lib/agent_resume.c): the client arguments that resume the session it wrote
 * in the workspace's home since since_ns ("--resume ID"), or NULL. Caller frees.
 */
char *launch_resume_args(const struct launch *l, int64_t since_ns);

#endif
