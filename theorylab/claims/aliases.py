"""Other names of registered claims: the catalog's ids where they differ from the registry's, and the other thesis'
numbering of the results that both theses contain (Y. Li's ``cfg.*`` for B. Liu's ``dyck.*``; Li's ``tf.*`` for the
``gibbs.tf_*`` records). A record may also list its own names in an ``aliases`` field; both are looked up by
:func:`theorylab.claims.registry.get`. An alias may name several records (one statement split into several checks);
``get`` returns the first, :func:`theorylab.claims.registry.resolve` all of them."""

from __future__ import annotations

#: alias -> the registered ids it names, in order
ALIASES: dict[str, tuple[str, ...]] = {
    # Li Ch. 2.2 = Liu Ch. 3.6 (the same work on Dyck balance)
    "cfg.def.dyck": ("dyck.def_language",),
    "cfg.def2.2.1": ("dyck.def_distribution",),
    "cfg.def2.2.3": ("dyck.thm1_balance_sufficiency", "dyck.thm1_balance_necessity"),
    "cfg.thm2.2.1": ("dyck.thm1_balance_sufficiency", "dyck.thm1_balance_necessity"),
    "cfg.cor2.2.1": ("dyck.cor1_uniform_attention",),
    "cfg.thm2.2.2": ("dyck.thm2_approx_balance",),
    "cfg.cor2.2.2": ("dyck.cor2_weight_decay",),
    "cfg.thm2.2.3": ("dyck.thm3_lottery",),
    "cfg.cor2.2.3": ("dyck.thm3_lottery",),
    "cfg.prop2.2.1": ("dyck.prop6_head_zero",),
    "cfg.sec2.2.5.8": ("dyck.sec2_2_5_8_post_ln", "dyck.fn49_block_comparison"),
    # Li Ch. 4: Transformers and parallel decoding (catalog ids tf.*)
    "tf.prop4.1.2": ("gibbs.tf_prop4.1.2",),
    "tf.prop4.3.4": ("gibbs.tf_prop4.1.2",),
    "tf.prop4.1.3": ("gibbs.tf_prop4.1.3",),
    "tf.prop4.3.5": ("gibbs.tf_prop4.1.3",),
}
