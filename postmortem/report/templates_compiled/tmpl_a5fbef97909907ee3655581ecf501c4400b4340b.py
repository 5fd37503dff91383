from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = '_timeline.html.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_timeline = resolve('timeline')
    l_0_svg = resolve('svg')
    l_0_svg_history = resolve('svg_history')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    try:
        t_2 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_3 = environment.filters['short']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No filter named 'short' found.")
    try:
        t_4 = environment.filters['sort']
    except KeyError:
        @internalcode
        def t_4(*unused):
            raise TemplateRuntimeError("No filter named 'sort' found.")
    try:
        t_5 = environment.tests['none']
    except KeyError:
        @internalcode
        def t_5(*unused):
            raise TemplateRuntimeError("No test named 'none' found.")
    pass
    yield '<section id="timeline" class="card" aria-labelledby="timeline-title">\n  <h2 id="timeline-title">Timeline</h2>\n  <p class="muted">\n    '
    yield escape(environment.finalize(environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'event_count')))
    yield ' events in '
    yield escape(environment.finalize((t_2(environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'rows')) + environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'cut_rows'))))
    yield ' rows (repetitions collapsed).\n    Times marked <span class="approx">≈</span> were inferred, never measured: the basis says how, ± how far off they may be.\n  </p>\n'
    if environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'event_count'):
        pass
        yield '  <form class="filters" aria-label="timeline filters">\n    <fieldset>\n      <legend>Source</legend>\n'
        for l_1_source in environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'sources'):
            _loop_vars = {}
            pass
            yield '      <label class="src-'
            yield escape(environment.finalize(l_1_source))
            yield '"><input type="checkbox" data-filter="src" value="'
            yield escape(environment.finalize(l_1_source))
            yield '" checked><i class="swatch"></i>'
            yield escape(environment.finalize(l_1_source))
            yield '</label>\n'
        l_1_source = missing
        yield '    </fieldset>\n'
        if (t_2(environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'lanes')) > 1):
            pass
            yield '    <fieldset>\n      <legend>Rank / lane</legend>\n'
            for l_1_lane in environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'lanes'):
                _loop_vars = {}
                pass
                yield '      <label><input type="checkbox" data-filter="lane" value="'
                yield escape(environment.finalize(environment.getattr(l_1_lane, 'number')))
                yield '" checked>'
                yield escape(environment.finalize(t_3(environment.getattr(l_1_lane, 'label'), 40)))
                yield '</label>\n'
            l_1_lane = missing
            yield '    </fieldset>\n'
        yield '    <fieldset class="legend" aria-label="legend">\n      <legend>Marks</legend>\n      <span><svg width="14" height="14" aria-hidden="true"><circle cx="7" cy="7" r="5" class="dot sev-error"/></svg>error</span>\n      <span><svg width="14" height="14" aria-hidden="true"><circle cx="7" cy="7" r="3" class="dot sev-info"/></svg>info</span>\n      <span><svg width="22" height="14" aria-hidden="true"><circle cx="11" cy="7" r="6" class="root-ring"/></svg>root</span>\n      <span><svg width="26" height="14" aria-hidden="true"><rect x="1" y="4" width="24" height="6" class="bar"/></svg>uncertainty</span>\n    </fieldset>\n  </form>\n'
        if (environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'bands') and (not t_5(environment.getattr(environment.getitem(environment.getattr((undefined(name='svg') if l_0_svg is missing else l_0_svg), 'bands'), 0), 't0')))):
            pass
            yield '  <p class="zoom muted" role="group" aria-label="zoom">\n    <button type="button" class="zoom-btn" data-zoom="in">zoom in</button>\n    <button type="button" class="zoom-btn" data-zoom="out">zoom out</button>\n    <button type="button" class="zoom-btn" data-zoom="job">the job</button>\n    <button type="button" class="zoom-btn" data-zoom="all">all its events</button>\n    wheel zooms, drag pans the time axis.\n  </p>\n'
        yield '  <div class="svgwrap">\n'
        template = environment.get_template('_timeline.svg.j2', '_timeline.html.j2')
        gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
        try:
            for event in gen:
                yield event
        finally: gen.close()
        yield '  </div>\n'
        if (undefined(name='svg_history') if l_0_svg_history is missing else l_0_svg_history):
            pass
            yield '  <details class="fold history">\n    <summary>'
            l_1_loop = missing
            for (l_1_why, l_1_n), l_1_loop in LoopContext(context.call(environment.getattr(environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'folded'), 'items')), undefined):
                _loop_vars = {}
                pass
                yield escape(environment.finalize(l_1_why))
                yield ': '
                yield escape(environment.finalize(l_1_n))
                yield ' event(s)'
                yield escape(environment.finalize(('; ' if (not environment.getattr(l_1_loop, 'last')) else cond_expr_undefined("the inline if-expression on line 45 in '_timeline.html.j2' evaluated to false and no else section was defined."))))
            l_1_loop = l_1_why = l_1_n = missing
            yield ', folded: never a root or a symptom</summary>\n    <div class="svgwrap">\n'
            l_1_svg = (undefined(name='svg_history') if l_0_svg_history is missing else l_0_svg_history)
            l_1_svg_id = 'hist'
            pass
            template = environment.get_template('_timeline.svg.j2', '_timeline.html.j2')
            gen = template.root_render_func(template.new_context(context.get_all(), True, {'svg': l_1_svg, 'svg_id': l_1_svg_id}))
            try:
                for event in gen:
                    yield event
            finally: gen.close()
            l_1_svg = l_1_svg_id = missing
            yield '    </div>\n  </details>\n'
    if environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'cut_marks'):
        pass
        yield '<p class="note">'
        yield escape(environment.finalize(environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'cut_marks')))
        yield ' more info marks not drawn (every root, warning and error mark is).</p>'
    yield '\n  <table class="rows">\n    <thead><tr><th>#</th><th>time</th><th>basis</th><th>count</th><th>ranks · hosts</th><th>event</th><th>artifact:line</th></tr></thead>\n    <tbody>\n'
    for l_1_row in environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'rows'):
        l_1_time_cell = resolve('time_cell')
        l_1_ranges = resolve('ranges')
        l_1_artifact_anchor = resolve('artifact_anchor')
        l_1_t = missing
        _loop_vars = {}
        pass
        l_1_t = context.call((undefined(name='time_cell') if l_1_time_cell is missing else l_1_time_cell), environment.getattr(l_1_row, 'first'), _loop_vars=_loop_vars)
        _loop_vars['t'] = l_1_t
        yield '    <tr id="'
        yield escape(environment.finalize(environment.getattr(l_1_row, 'anchor')))
        yield '" class="sev-'
        yield escape(environment.finalize(environment.getattr(environment.getattr(l_1_row, 'severity'), 'value')))
        yield escape(environment.finalize((' root' if environment.getattr(l_1_row, 'is_root') else cond_expr_undefined("the inline if-expression on line 59 in '_timeline.html.j2' evaluated to false and no else section was defined."))))
        yield '" data-src="'
        yield escape(environment.finalize(environment.getattr(l_1_row, 'source')))
        yield '" data-lanes="'
        yield escape(environment.finalize(t_1(context.eval_ctx, t_4(environment, environment.getattr(l_1_row, 'lanes')), ' ')))
        yield '">\n      <td class="num">'
        yield escape(environment.finalize(environment.getattr(l_1_row, 'number')))
        if environment.getattr(l_1_row, 'is_root'):
            pass
            yield '<span class="rootmark" title="root fault">root</span>'
        yield '</td>\n      <td class="time">'
        if environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'iso'):
            pass
            yield '<time datetime="'
            yield escape(environment.finalize(environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'iso')))
            yield '">'
            if environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'approx'):
                pass
                yield '<span class="approx" title="inferred">≈</span>'
            yield escape(environment.finalize(environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'text')))
            yield '</time>'
        else:
            pass
            yield '<span class="muted">—</span>'
        yield '</td>\n      <td class="basis'
        yield escape(environment.finalize((' inferred' if environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'approx') else cond_expr_undefined("the inline if-expression on line 62 in '_timeline.html.j2' evaluated to false and no else section was defined."))))
        yield '">'
        yield escape(environment.finalize(environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'basis')))
        if environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'plus_minus'):
            pass
            yield ' <span class="pm">'
            yield escape(environment.finalize(environment.getattr((undefined(name='t') if l_1_t is missing else l_1_t), 'plus_minus')))
            yield '</span>'
        yield '</td>\n      <td class="count">'
        yield escape(environment.finalize(environment.getattr(l_1_row, 'count')))
        yield '</td>\n      <td class="who">'
        if environment.getattr(l_1_row, 'ranks'):
            pass
            yield 'rank '
            yield escape(environment.finalize(context.call((undefined(name='ranges') if l_1_ranges is missing else l_1_ranges), environment.getattr(l_1_row, 'ranks'), _loop_vars=_loop_vars)))
        if environment.getattr(l_1_row, 'hosts'):
            pass
            if environment.getattr(l_1_row, 'ranks'):
                pass
                yield ' · '
            yield escape(environment.finalize(t_3(t_1(context.eval_ctx, t_4(environment, environment.getattr(l_1_row, 'hosts')), ', '), 60)))
        yield '</td>\n      <td class="what">\n        <span class="kind src-'
        yield escape(environment.finalize(environment.getattr(l_1_row, 'source')))
        yield '"><i class="swatch"></i>'
        yield escape(environment.finalize(environment.getattr(l_1_row, 'kind')))
        yield '</span>\n'
        for l_2_n in environment.getattr(l_1_row, 'evidence'):
            _loop_vars = {}
            pass
            yield '<a href="#ev-'
            yield escape(environment.finalize(l_2_n))
            yield '" class="cite">['
            yield escape(environment.finalize(l_2_n))
            yield ']</a>'
        l_2_n = missing
        if (environment.getattr(l_1_row, 'count') > 1):
            pass
            yield '        <details class="occurrences">\n          <summary><code>'
            yield escape(environment.finalize(t_3(environment.getattr(l_1_row, 'text'), 400)))
            yield '</code> <span class="muted">×'
            yield escape(environment.finalize(environment.getattr(l_1_row, 'count')))
            yield '</span></summary>\n          <ol>\n'
            for l_2_e in environment.getattr(l_1_row, 'sample'):
                l_2_et = missing
                _loop_vars = {}
                pass
                l_2_et = context.call((undefined(name='time_cell') if l_1_time_cell is missing else l_1_time_cell), l_2_e, _loop_vars=_loop_vars)
                _loop_vars['et'] = l_2_et
                yield '            <li><span class="muted">'
                if (environment.getattr((undefined(name='et') if l_2_et is missing else l_2_et), 'approx') and environment.getattr((undefined(name='et') if l_2_et is missing else l_2_et), 'iso')):
                    pass
                    yield '≈'
                yield escape(environment.finalize(environment.getattr((undefined(name='et') if l_2_et is missing else l_2_et), 'text')))
                yield ' · '
                yield escape(environment.finalize(context.call(environment.getattr(environment.getattr(l_2_e, 'ref'), 'describe'), _loop_vars=_loop_vars)))
                if (not t_5(environment.getattr(l_2_e, 'rank'))):
                    pass
                    yield ' · rank '
                    yield escape(environment.finalize(environment.getattr(l_2_e, 'rank')))
                if environment.getattr(l_2_e, 'host'):
                    pass
                    yield ' · '
                    yield escape(environment.finalize(environment.getattr(l_2_e, 'host')))
                yield '</span> <code>'
                yield escape(environment.finalize(t_3(environment.getattr(l_2_e, 'text'), 400)))
                yield '</code></li>\n'
            l_2_e = l_2_et = missing
            yield '          </ol>\n'
            if (environment.getattr(l_1_row, 'count') > t_2(environment.getattr(l_1_row, 'sample'))):
                pass
                yield '<p class="muted">… and '
                yield escape(environment.finalize((environment.getattr(l_1_row, 'count') - t_2(environment.getattr(l_1_row, 'sample')))))
                yield ' more; the last at '
                yield escape(environment.finalize(context.call(environment.getattr(environment.getattr(environment.getattr(l_1_row, 'last'), 'ref'), 'describe'), _loop_vars=_loop_vars)))
                yield '.</p>'
            yield '        </details>\n'
        else:
            pass
            yield '        <code>'
            yield escape(environment.finalize(t_3(environment.getattr(l_1_row, 'text'), 400)))
            yield '</code>\n'
        yield '      </td>\n      <td class="where">'
        if context.call(environment.getattr((undefined(name='artifact_anchor') if l_1_artifact_anchor is missing else l_1_artifact_anchor), 'get'), environment.getattr(environment.getattr(environment.getattr(l_1_row, 'first'), 'ref'), 'path'), _loop_vars=_loop_vars):
            pass
            yield '<a href="#'
            yield escape(environment.finalize(environment.getitem((undefined(name='artifact_anchor') if l_1_artifact_anchor is missing else l_1_artifact_anchor), environment.getattr(environment.getattr(environment.getattr(l_1_row, 'first'), 'ref'), 'path'))))
            yield '">'
            yield escape(environment.finalize(context.call(environment.getattr(environment.getattr(environment.getattr(l_1_row, 'first'), 'ref'), 'describe'), _loop_vars=_loop_vars)))
            yield '</a>'
        else:
            pass
            yield escape(environment.finalize(context.call(environment.getattr(environment.getattr(environment.getattr(l_1_row, 'first'), 'ref'), 'describe'), _loop_vars=_loop_vars)))
        yield '</td>\n    </tr>\n'
    l_1_row = l_1_time_cell = l_1_t = l_1_ranges = l_1_artifact_anchor = missing
    yield '    </tbody>\n  </table>\n'
    if environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'cut_rows'):
        pass
        yield '<p class="note">'
        yield escape(environment.finalize(environment.getattr((undefined(name='timeline') if l_0_timeline is missing else l_0_timeline), 'cut_rows')))
        yield ' more info rows not shown (every root, warning and error row is).</p>'
    yield '</section>'

blocks = {}
debug_info = '4=45&7=49&11=52&12=56&15=64&18=67&19=71&31=78&41=82&43=89&45=93&47=106&52=114&57=120&58=127&59=130&60=139&61=144&62=158&63=167&64=169&66=180&67=184&68=193&70=196&72=200&73=204&74=207&77=226&80=237&83=240&88=253'