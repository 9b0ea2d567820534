/*
 * fs/gitinit.c: libgit2's global set-up without the parts arborinth never uses.
 *
 * Debian's libgit2 links libssh2, whose first libssh2_init() initialises OpenSSL (loading its
 * configuration and algorithm tables): about 3 MiB of touched pages and a few milliseconds on
 * every start, for SSH transports no arborinth process uses (git fetch/push run the git CLI).
 * libssh2 initialises its crypto only on its first init, so one init of ours with
 * LIBSSH2_INIT_NO_CRYPTO before libgit2's makes libgit2's a no-op. libssh2 is looked up in the
 * process (it is loaded as libgit2's dependency), so nothing links against it and a libgit2
 * built without SSH simply skips this.
 */
#include <dlfcn.h>
#include <git2.h>

#include "fs/fs.h"

#define SSH2_INIT_NO_CRYPTO 0x0001 /* LIBSSH2_INIT_NO_CRYPTO in libssh2.h */

void fs_git_init(void)
{
	static int done;
	int (*ssh2_init)(int flags);
	int major, minor, rev;

	if (!__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) {
		(void)git_libgit2_version(&major, &minor, &rev);
		*(void **)&ssh2_init = dlsym(RTLD_DEFAULT, "libssh2_init");
		if (ssh2_init)
			(void)ssh2_init(SSH2_INIT_NO_CRYPTO);
	}
	git_libgit2_init();
}
