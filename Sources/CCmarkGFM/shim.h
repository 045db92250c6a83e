#ifndef NOTES_CCMARKGFM_SHIM_H
#define NOTES_CCMARKGFM_SHIM_H
/* cmark-gfm (Debian's libcmark-gfm-dev and libcmark-gfm-extensions-dev): GitHub's
   CommonMark parser and HTML renderer with its core extensions. */
#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>
#include <stdlib.h>

/* Option bits are macros that import as Int32; named here as unsigned for Swift. */
static const int NOTES_CMARK_OPT_DEFAULT = CMARK_OPT_DEFAULT;
static const int NOTES_CMARK_OPT_UNSAFE = CMARK_OPT_UNSAFE;
static const int NOTES_CMARK_OPT_FOOTNOTES = CMARK_OPT_FOOTNOTES;
static const int NOTES_CMARK_OPT_STRIKETHROUGH_DOUBLE_TILDE = CMARK_OPT_STRIKETHROUGH_DOUBLE_TILDE;
#endif
