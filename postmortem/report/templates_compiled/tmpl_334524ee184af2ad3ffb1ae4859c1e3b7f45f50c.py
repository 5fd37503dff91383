from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = '_artifacts.html.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_artifacts = resolve('artifacts')
    l_0_cut_artifacts = resolve('cut_artifacts')
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    pass
    yield '<section id="artifacts" class="card" aria-labelledby="artifacts-title">\n  <h2 id="artifacts-title">Artifacts</h2>\n  <p class="muted">Every file of the bundle, what it was taken for, and what became of it.</p>\n  <table class="artifacts">\n    <thead><tr><th>file</th><th>kind</th><th>parsers</th><th>status</th><th class="n">lines</th><th class="n">unclaimed</th><th>problems</th></tr></thead>\n    <tbody>\n'
    for l_1_row in (undefined(name='artifacts') if l_0_artifacts is missing else l_0_artifacts):
        l_1_x = missing
        _loop_vars = {}
        pass
        l_1_x = environment.getattr(l_1_row, 'artifact')
        _loop_vars['x'] = l_1_x
        yield '    <tr id="'
        yield escape(environment.finalize(environment.getattr(l_1_row, 'anchor')))
        yield '" class="status-'
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'status'), 'value')))
        yield escape(environment.finalize((' problem' if environment.getattr(l_1_row, 'problem') else cond_expr_undefined("the inline if-expression on line 9 in '_artifacts.html.j2' evaluated to false and no else section was defined."))))
        yield '">\n      <td class="path"><code>'
        yield escape(environment.finalize(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'path')))
        yield '</code>'
        if environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'host'):
            pass
            yield ' <span class="muted">host '
            yield escape(environment.finalize(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'host')))
            yield '</span>'
        yield '</td>\n      <td>'
        yield escape(environment.finalize(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'kind')))
        yield '</td>\n      <td>'
        yield escape(environment.finalize((t_1(context.eval_ctx, environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'parsers'), ', ') or '—')))
        yield '</td>\n      <td><span class="status">'
        yield escape(environment.finalize(environment.getattr(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'status'), 'value')))
        yield '</span></td>\n      <td class="n">'
        yield escape(environment.finalize(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'lines')))
        yield '</td>\n      <td class="n'
        yield escape(environment.finalize((' warn' if environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'unclaimed') else cond_expr_undefined("the inline if-expression on line 15 in '_artifacts.html.j2' evaluated to false and no else section was defined."))))
        yield '">'
        yield escape(environment.finalize(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'unclaimed')))
        yield '</td>\n      <td>'
        yield escape(environment.finalize(environment.getattr((undefined(name='x') if l_1_x is missing else l_1_x), 'message')))
        yield '</td>\n    </tr>\n'
    l_1_row = l_1_x = missing
    yield '    </tbody>\n  </table>\n'
    if (undefined(name='cut_artifacts') if l_0_cut_artifacts is missing else l_0_cut_artifacts):
        pass
        yield '<p class="note">'
        yield escape(environment.finalize((undefined(name='cut_artifacts') if l_0_cut_artifacts is missing else l_0_cut_artifacts)))
        yield ' more artifacts without problems not listed.</p>'
    yield '</section>'

blocks = {}
debug_info = '7=20&8=24&9=27&10=32&11=40&12=42&13=44&14=46&15=48&16=52&21=56'