"""`cudamigrate server`: a Language Server (LSP over stdio) for editors.

`analysis` is the editor-independent part (which engine a document gets, its findings, the edits of a fix or
a suppression, in byte offsets); `lsp` maps it onto the protocol with pygls/lsprotocol.
"""
