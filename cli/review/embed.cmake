# cli/review/embed.cmake: the review page's files (index.html, review.js, review.css) as C
# arrays in one generated source, so the binary serves them without reading any file at run
# time. Run as `cmake -DOUT=... -DIN="a;b;c" -P embed.cmake`.
set(body "/* Generated from cli/review/ by embed.cmake: do not edit. */\n#include <stddef.h>\n")
set(table "")
foreach(f IN LISTS IN)
  get_filename_component(base "${f}" NAME)
  string(MAKE_C_IDENTIFIER "${base}" id)
  file(READ "${f}" hex HEX)
  string(LENGTH "${hex}" len)
  math(EXPR size "${len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "static const unsigned char ${id}[] = {${bytes}0};\n")
  string(APPEND table "    {\"/${base}\", ${id}, ${size}},\n")
endforeach()
string(APPEND body "struct review_asset {\n\tconst char *path;\n\tconst unsigned char *data;\n"
       "\tsize_t size;\n};\nextern const struct review_asset review_assets[];\n"
       "const struct review_asset review_assets[] = {\n${table}    {NULL, NULL, 0},\n};\n")
file(WRITE "${OUT}.tmp" "${body}")
file(RENAME "${OUT}.tmp" "${OUT}")
