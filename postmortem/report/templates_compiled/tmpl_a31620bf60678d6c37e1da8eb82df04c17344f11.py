from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = '_stacks.html.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_cores = resolve('cores')
    l_0_stacks = resolve('stacks')
    l_0_stack_block = missing
    try:
        t_1 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_2 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    yield '<section id="stacks" class="card" aria-labelledby="stacks-title">\n  <h2 id="stacks-title">Stacks</h2>\n'
    if (undefined(name='cores') if l_0_cores is missing else l_0_cores):
        pass
        yield '  <h3>Core files</h3>\n  <div class="cores">\n'
        for l_1_core in (undefined(name='cores') if l_0_cores is missing else l_0_cores):
            l_1_artifact_anchor = resolve('artifact_anchor')
            _loop_vars = {}
            pass
            yield '  <div class="core">\n    <h4>'
            if context.call(environment.getattr((undefined(name='artifact_anchor') if l_1_artifact_anchor is missing else l_1_artifact_anchor), 'get'), environment.getattr(l_1_core, 'artifact'), _loop_vars=_loop_vars):
                pass
                yield '<a href="#'
                yield escape(environment.finalize(environment.getitem((undefined(name='artifact_anchor') if l_1_artifact_anchor is missing else l_1_artifact_anchor), environment.getattr(l_1_core, 'artifact'))))
                yield '">'
                yield escape(environment.finalize(environment.getattr(l_1_core, 'artifact')))
                yield '</a>'
            else:
                pass
                yield escape(environment.finalize(environment.getattr(l_1_core, 'artifact')))
            yield '</h4>\n'
            if environment.getattr(l_1_core, 'fault_line'):
                pass
                yield '<p class="fault"><b>fault</b> <code>'
                yield escape(environment.finalize(environment.getattr(l_1_core, 'fault_line')))
                yield '</code></p>'
            yield '    <dl>'
            for (l_2_label, l_2_value) in environment.getattr(l_1_core, 'facts'):
                _loop_vars = {}
                pass
                yield '<dt>'
                yield escape(environment.finalize(l_2_label))
                yield '</dt><dd><code>'
                yield escape(environment.finalize(l_2_value))
                yield '</code></dd>'
            l_2_label = l_2_value = missing
            yield '</dl>\n  </div>\n'
        l_1_core = l_1_artifact_anchor = missing
        yield '  </div>\n'
    def macro(l_1_sv):
        t_3 = []
        l_1_artifact_anchor = resolve('artifact_anchor')
        if l_1_sv is missing:
            l_1_sv = undefined("parameter 'sv' was not provided", name='sv')
        pass
        t_3.extend((
            '  <div class="stack" id="',
            escape(environment.finalize(environment.getattr(l_1_sv, 'anchor'))),
            '">\n    <div class="stack-head">\n',
        ))
        if environment.getattr(l_1_sv, 'is_primary'):
            pass
            t_3.append(
                '<span class="badge crash">crashing thread</span>',
            )
        elif environment.getattr(environment.getattr(l_1_sv, 'stack'), 'crashed'):
            pass
            t_3.append(
                '<span class="badge crash-other">marked crashed</span>',
            )
        t_3.extend((
            '      <b>',
            escape(environment.finalize((environment.getattr(environment.getattr(l_1_sv, 'stack'), 'title') or environment.getattr(environment.getattr(l_1_sv, 'stack'), 'origin')))),
            '</b>\n      <span class="muted">',
            escape(environment.finalize(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'origin'))),
        ))
        if environment.getattr(environment.getattr(l_1_sv, 'stack'), 'thread'):
            pass
            t_3.extend((
                ' · thread ',
                escape(environment.finalize(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'thread'))),
            ))
        if environment.getattr(environment.getattr(l_1_sv, 'stack'), 'host'):
            pass
            t_3.extend((
                ' · ',
                escape(environment.finalize(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'host'))),
            ))
        if (not t_2(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'pid'))):
            pass
            t_3.extend((
                ' · pid ',
                escape(environment.finalize(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'pid'))),
            ))
        if (not t_2(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'tid'))):
            pass
            t_3.extend((
                ' · tid ',
                escape(environment.finalize(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'tid'))),
            ))
        if (not t_2(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'rank'))):
            pass
            t_3.extend((
                ' · rank ',
                escape(environment.finalize(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'rank'))),
            ))
        t_3.append(
            '      · ',
        )
        if context.call(environment.getattr((undefined(name='artifact_anchor') if l_1_artifact_anchor is missing else l_1_artifact_anchor), 'get'), environment.getattr(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'ref'), 'path')):
            pass
            t_3.extend((
                '<a href="#',
                escape(environment.finalize(environment.getitem((undefined(name='artifact_anchor') if l_1_artifact_anchor is missing else l_1_artifact_anchor), environment.getattr(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'ref'), 'path')))),
                '">',
                escape(environment.finalize(context.call(environment.getattr(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'ref'), 'describe')))),
                '</a>',
            ))
        else:
            pass
            t_3.append(
                escape(environment.finalize(context.call(environment.getattr(environment.getattr(environment.getattr(l_1_sv, 'stack'), 'ref'), 'describe')))),
            )
        t_3.append(
            '</span>\n    </div>\n',
        )
        for l_2_run in environment.getattr(l_1_sv, 'runs'):
            _loop_vars = {}
            pass
            t_3.extend((
                '    <div class="frames grp-',
                escape(environment.finalize(environment.getattr(l_2_run, 'group'))),
                '">\n      <span class="grp">',
                escape(environment.finalize(environment.getattr(l_2_run, 'group'))),
                '</span>\n      <ol start="',
                escape(environment.finalize(environment.getitem(environment.getitem(environment.getattr(l_2_run, 'frames'), 0), 0))),
                '">\n',
            ))
            for (l_3_index, l_3_frame) in environment.getattr(l_2_run, 'frames'):
                l_3_describe_frame = resolve('describe_frame')
                _loop_vars = {}
                pass
                t_3.extend((
                    '<li value="',
                    escape(environment.finalize(l_3_index)),
                    '"><code>',
                    escape(environment.finalize(context.call((undefined(name='describe_frame') if l_3_describe_frame is missing else l_3_describe_frame), l_3_frame, _loop_vars=_loop_vars))),
                    '</code></li>',
                ))
            l_3_index = l_3_frame = l_3_describe_frame = missing
            t_3.append(
                '      </ol>\n    </div>\n',
            )
        l_2_run = missing
        if (not environment.getattr(l_1_sv, 'runs')):
            pass
            t_3.append(
                '<p class="muted">No frames were printed.</p>',
            )
        if environment.getattr(l_1_sv, 'cut_frames'):
            pass
            t_3.extend((
                '<p class="note">',
                escape(environment.finalize(environment.getattr(l_1_sv, 'cut_frames'))),
                ' more frames not shown.</p>',
            ))
        t_3.append(
            '  </div>\n',
        )
        return concat(t_3)
    context.exported_vars.add('stack_block')
    context.vars['stack_block'] = l_0_stack_block = Macro(environment, macro, 'stack_block', ('sv',), False, False, False, context.eval_ctx.autoescape)
    for l_1_sv in environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'shown'):
        _loop_vars = {}
        pass
        yield escape(environment.finalize(context.call((undefined(name='stack_block') if l_0_stack_block is missing else l_0_stack_block), l_1_sv, _loop_vars=_loop_vars)))
    l_1_sv = missing
    if environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'folded'):
        pass
        yield '  <details class="fold">\n    <summary>Other threads ('
        yield escape(environment.finalize(t_1(environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'folded'))))
        yield ')</summary>\n'
        for l_1_sv in environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'folded'):
            _loop_vars = {}
            pass
            yield escape(environment.finalize(context.call((undefined(name='stack_block') if l_0_stack_block is missing else l_0_stack_block), l_1_sv, _loop_vars=_loop_vars)))
        l_1_sv = missing
        yield '  </details>\n'
    if environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'cut'):
        pass
        yield '<p class="note">'
        yield escape(environment.finalize(environment.getattr((undefined(name='stacks') if l_0_stacks is missing else l_0_stacks), 'cut')))
        yield ' more stacks not shown.</p>'
    yield '</section>'

blocks = {}
debug_info = '3=27&6=30&8=35&9=46&10=52&15=64&16=72&18=75&19=87&20=89&21=124&23=141&24=146&25=148&26=150&27=153&31=169&32=174&35=187&36=192&38=195&39=197&42=203'